{{/* Names and labels as upstream's chart makes them, so that objects keep upstream's names. */}}
{{- define "trainer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "trainer.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "trainer.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: trainer
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "trainer.manager.name" -}}
{{ include "trainer.fullname" . }}-controller-manager
{{- end -}}

{{- define "trainer.manager.selectorLabels" -}}
app.kubernetes.io/name: trainer
app.kubernetes.io/part-of: kubeflow
app.kubernetes.io/component: manager
{{- with .Values.manager.selectorLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "trainer.manager.labels" -}}
{{ include "trainer.labels" . }}
app.kubernetes.io/part-of: kubeflow
app.kubernetes.io/component: manager
{{- with .Values.manager.labels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "trainer.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.registry -}}
{{ printf "%s/%s:%s" .Values.image.registry .Values.image.repository $tag }}
{{- else -}}
{{ printf "%s:%s" .Values.image.repository $tag }}
{{- end -}}
{{- end }}

{{/* The webhook certificate Secret's name: the webhooks' and the status server's certificate and CA. */}}
{{- define "trainer.webhook.secret.name" -}}
{{- .Values.manager.config.certManagement.webhookSecretName | default "kubeflow-trainer-webhook-cert" -}}
{{- end }}
