#!/usr/bin/env python3
"""Regenerate api/external/*.json: the schemas of the Kubernetes, JobSet and Volcano
types that the trainer.kubeflow.org/v1alpha1 kinds embed.

Run by hand from the repository root, after bumping one of the versions below:

    python3 scripts/import-k8s-schema.py            # rewrite api/external/*.json
    python3 scripts/import-k8s-schema.py --check    # exit 1 if the files are stale

Inputs (Go module cache, read-only; `go mod download` fetches a missing one):

  * k8s.io/kubernetes@K8S_VERSION   api/openapi-spec/v3/*.json
        Kubernetes' published OpenAPI v3 documents: the structure of every core,
        batch, autoscaling and meta type.
  * k8s.io/api@K8S_API_VERSION, k8s.io/apimachinery@K8S_API_VERSION   *.go
        The Go types behind those documents. OpenAPI omits what only controller-gen
        reads (kubebuilder validation markers) and adds what controller-gen never
        writes (zero-value defaults), so the comment markers are read to correct both.
  * sigs.k8s.io/jobset@JOBSET_VERSION   config/components/crd/bases/*.yaml and
        api/jobset/v1alpha2/jobset_types.go
        JobSet publishes no OpenAPI document we can read, but its CRD is controller-gen
        output. The JobSetSpec subtree is cut into one definition per Go type; fields of
        Kubernetes types become $refs again, and the result is checked to expand back to
        exactly the CRD's subtree.
  * volcano.sh/apis@VOLCANO_VERSION   pkg/apis/scheduling/v1beta1/types.go
        Only NetworkTopologySpec is needed; it is derived from the Go struct.

The versions are the ones kubeflow/trainer v2.3.0 pins in its go.mod.

Output: one JSON file per source, a top-level `source` (module@version) and
`definitions` (name -> schema), one definition per line, keys sorted, so the output is
byte-for-byte stable and diffs stay readable. The schema language is the CRD
openAPIV3Schema subset described in docs/api-schema.md, with `$ref: Name` pointing at
another definition by its bare name. Descriptions are dropped on purpose: the CRDs carry
structure only for types we do not own.

What controller-gen does differently from OpenAPI, and is reproduced here:
  * ObjectMeta inside a template is the restricted form (annotations, finalizers,
    labels, name, namespace): definition kftrainer.EmbeddedObjectMeta.
  * Quantity and IntOrString are int-or-string schemas; Time is a date-time string.
  * `default` only where the Go field carries +default or +kubebuilder:default.
  * kubebuilder validation markers (lengths, patterns, enums, minimum) are applied.
  * `required` follows controller-gen: +required / +kubebuilder:validation:Required,
    or a json tag without omitempty and no +optional. It is written sorted.
"""

import argparse
import copy
import glob
import json
import os
import re
import sys

import yaml

GOMOD = os.path.join(os.environ.get("GOMODCACHE") or os.path.expanduser("~/go/pkg/mod"))
K8S_VERSION = "v1.36.2"
K8S_API_VERSION = "v0.36.2"
JOBSET_VERSION = "v0.12.0"
VOLCANO_VERSION = "v1.13.1-0.20251028070205-46d20c0699e7"

K8S_OPENAPI_FILES = [
    "api__v1_openapi.json",
    "apis__batch__v1_openapi.json",
    "apis__autoscaling__v2_openapi.json",
]

# Where the Go sources of each package live in the module cache (for its markers).
K8S_GO_PACKAGES = {
    "k8s.io/api/core/v1": "k8s.io/api@{api}/core/v1",
    "k8s.io/api/batch/v1": "k8s.io/api@{api}/batch/v1",
    "k8s.io/api/autoscaling/v2": "k8s.io/api@{api}/autoscaling/v2",
    "k8s.io/apimachinery/pkg/apis/meta/v1": "k8s.io/apimachinery@{api}/pkg/apis/meta/v1",
}

# The Kubernetes types our kinds embed directly (the JobSet import adds its own).
K8S_ROOTS = [
    "io.k8s.api.core.v1.Affinity",
    "io.k8s.api.core.v1.EnvVar",
    "io.k8s.api.core.v1.LocalObjectReference",
    "io.k8s.api.core.v1.PodSchedulingGate",
    "io.k8s.api.core.v1.PodSecurityContext",
    "io.k8s.api.core.v1.ResourceRequirements",
    "io.k8s.api.core.v1.SecurityContext",
    "io.k8s.api.core.v1.Toleration",
    "io.k8s.api.core.v1.Volume",
    "io.k8s.api.core.v1.VolumeMount",
    "io.k8s.api.autoscaling.v2.MetricSpec",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Condition",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
]

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
EMBEDDED_META = "kftrainer.EmbeddedObjectMeta"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"

# controller-gen's fixed renderings of the types it special-cases.
SPECIAL = {
    QUANTITY: {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]"
        r"|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
        "x-kubernetes-int-or-string": True,
    },
    INT_OR_STRING: {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    },
    TIME: {"type": "string", "format": "date-time"},
    EMBEDDED_META: {
        "type": "object",
        "properties": {
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            "finalizers": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "name": {"type": "string"},
            "namespace": {"type": "string"},
        },
    },
}

# Keys of our schema language (docs/api-schema.md). Anything else in an input is
# either dropped knowingly (DROPPED) or a reason to stop.
ALLOWED = {
    "$ref", "type", "format", "description", "properties", "additionalProperties",
    "items", "required", "enum", "default", "minimum", "maximum", "minLength",
    "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "pattern",
    "nullable", "anyOf", "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
    "x-kubernetes-validations",
}
DROPPED = {
    "description", "x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key",
    "x-kubernetes-unions", "x-kubernetes-group-version-kind",
}


def fail(msg):
    sys.exit("import-k8s-schema: " + msg)


# ---------------------------------------------------------------------------
# Go sources: just enough of a reader to find struct fields, json names and the
# "+marker" comment lines right above them.


# "// +key=value" or "// +key"; JobSet also writes "+key:=value".
MARKER = re.compile(r"^//\s*\+([\w:./-]+)(?:=(.*))?$")


class GoField:
    def __init__(self, name, gotype, tag, markers):
        self.name = name  # None for an embedded field
        self.type = gotype
        parts = tag.split(",") if tag is not None else [""]
        self.json = parts[0]
        self.inline = "inline" in parts[1:]
        self.omitempty = "omitempty" in parts[1:] or "omitzero" in parts[1:]
        self.markers = markers  # list of (key, value-or-None)


class GoPackage:
    def __init__(self, directory, loader=None):
        self.loader = loader  # import path -> GoPackage, for inline fields of other packages
        self.structs = {}  # type name -> [GoField]
        self.type_markers = {}  # type name -> markers in the comment right above it
        self.aliases = {}  # type name -> underlying type (e.g. "string")
        self.imports = {}  # alias -> import path
        files = sorted(glob.glob(os.path.join(directory, "*.go")))
        files = [f for f in files if not f.endswith("_test.go")]
        if not files:
            fail("no Go files in " + directory)
        for path in files:
            with open(path, encoding="utf-8") as f:
                self._scan(f.read().split("\n"))

    def _scan(self, lines):
        i, markers = 0, []
        while i < len(lines):
            line = lines[i]
            m = MARKER.match(line)
            if m:
                markers.append((m.group(1).rstrip(":"), m.group(2)))
            elif not line.startswith("//"):
                if line.startswith("type "):
                    self.type_markers[line.split()[1]] = markers
                markers = []
            m = re.match(r'^\s*(\w+)\s+"([^"]+)"\s*$', line)
            if m and not line.startswith("type"):
                self.imports[m.group(1)] = m.group(2)
            m = re.match(r"^type (\w+) struct \{\s*$", line)
            if m:
                i = self._scan_struct(m.group(1), lines, i + 1)
                continue
            m = re.match(r"^type (\w+) ([\w.\[\]*]+)\s*(//.*)?$", line)
            if m:
                self.aliases[m.group(1)] = m.group(2)
            i += 1

    def _scan_struct(self, name, lines, i):
        fields, markers = [], []
        while not lines[i].startswith("}"):
            text = lines[i].strip()
            i += 1
            if not text:
                markers = []
                continue
            if text.startswith("//"):
                m = MARKER.match(text)
                if m:
                    markers.append((m.group(1).rstrip(":"), m.group(2)))
                continue
            m = re.match(r"^(?:(\w+)\s+)?(\S+)\s*`(.*)`", text)
            if not m:
                markers = []
                continue
            tag = re.search(r'json:"([^"]*)"', m.group(3))
            fields.append(GoField(m.group(1), m.group(2), tag.group(1) if tag else None, markers))
            markers = []
        self.structs[name] = fields
        return i + 1

    def json_fields(self, type_name):
        """Fields by json name, with inline embedded structs flattened."""
        out = {}
        for f in self.structs.get(type_name, []):
            if f.inline or (f.name is None and not f.json):
                base = f.type.lstrip("*")
                if "." not in base:
                    out.update(self.json_fields(base))
                elif self.loader is not None:
                    alias, _, type_name = base.partition(".")
                    out.update(self.loader(self.imports[alias]).json_fields(type_name))
                continue
            if f.json and f.json != "-":
                out[f.json] = f
        return out

    def inlines_atomic(self, type_name):
        """Whether a struct embeds (inline) one marked +structType=atomic.

        controller-gen flattens the embedded schema into the outer one, map type
        included; OpenAPI does not, so this is where the two disagree."""
        for f in self.structs.get(type_name, []):
            if not (f.inline or (f.name is None and not f.json)) or "." in f.type:
                continue
            base = f.type.lstrip("*")
            if ("structType", "atomic") in self.type_markers.get(base, []):
                return True
            if self.inlines_atomic(base):
                return True
        return False


def marker_values(markers, key):
    return [v for k, v in markers if k == key]


def parse_marker_scalar(text):
    """A kubebuilder marker value: JSON when it parses, else the raw string."""
    text = text.strip()
    if text.startswith("`") and text.endswith("`"):
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_xvalidation(text):
    """rule="...",message="..." -> {"rule": ..., "message": ...}."""
    out = {}
    for m in re.finditer(r'(\w+)=("(?:[^"\\]|\\.)*"|`[^`]*`)', text):
        out[m.group(1)] = parse_marker_scalar(m.group(2))
    if "rule" not in out:
        fail("cannot read XValidation marker: " + text)
    return {k: out[k] for k in ("rule", "message") if k in out}


def is_required(field):
    """controller-gen's rule for whether a struct field is listed in `required`."""
    keys = {k for k, _ in field.markers}
    if "required" in keys or "kubebuilder:validation:Required" in keys:
        return True
    if "optional" in keys or "kubebuilder:validation:Optional" in keys:
        return False
    return not field.omitempty


def marker_overlay(field, schema):
    """Schema keys controller-gen derives from a field's kubebuilder markers."""
    out = {}
    numeric = {
        "MaxLength": "maxLength", "MinLength": "minLength", "MaxItems": "maxItems",
        "MinItems": "minItems", "Maximum": "maximum", "Minimum": "minimum",
    }
    for key, value in field.markers:
        if not key.startswith("kubebuilder:validation:"):
            continue
        what = key.split(":", 2)[2]
        if what in numeric:
            out[numeric[what]] = parse_marker_scalar(value)
        elif what == "Pattern":
            out["pattern"] = parse_marker_scalar(value)
        elif what == "Enum":
            out["enum"] = [parse_marker_scalar(v) for v in value.split(";")]
        elif what == "XValidation":
            out.setdefault("x-kubernetes-validations", []).append(parse_xvalidation(value))
        elif what in ("Type", "Format"):
            # Only restates what the referenced type already renders as.
            expected = SPECIAL.get(schema.get("$ref"), schema).get(what.lower())
            if parse_marker_scalar(value) != expected:
                fail("unexpected %s marker on field %s" % (what, field.json))
        elif what not in ("Required", "Optional"):
            fail("unhandled marker +%s on field %s" % (key, field.json))
    return out


def has_default_marker(field):
    """controller-gen honours +default and +kubebuilder:default, but not +default=ref(...)."""
    return any(k in ("default", "kubebuilder:default") and not (v or "").startswith("ref(")
               for k, v in field.markers)


# ---------------------------------------------------------------------------
# Kubernetes: OpenAPI v3 components -> our definitions.


def bare_ref(ref):
    prefix = "#/components/schemas/"
    if not ref.startswith(prefix):
        fail("unexpected $ref " + ref)
    name = ref[len(prefix):]
    return EMBEDDED_META if name == OBJECT_META else name


class K8sImporter:
    def __init__(self):
        base = os.path.join(GOMOD, "k8s.io/kubernetes@" + K8S_VERSION, "api/openapi-spec/v3")
        self.schemas = {}
        for name in K8S_OPENAPI_FILES:
            with open(os.path.join(base, name), encoding="utf-8") as f:
                self.schemas.update(json.load(f)["components"]["schemas"])
        self.packages = {}
        self.definitions = {}

    def go_package(self, import_path):
        if import_path not in K8S_GO_PACKAGES:
            fail("no Go package known for " + import_path)
        if import_path not in self.packages:
            rel = K8S_GO_PACKAGES[import_path].format(api=K8S_API_VERSION)
            self.packages[import_path] = GoPackage(os.path.join(GOMOD, rel), self.go_package)
        return self.packages[import_path]

    def go_type(self, def_name):
        """(package, type name) of a definition's Go struct."""
        prefix, _, type_name = def_name.rpartition(".")
        paths = [p for p in K8S_GO_PACKAGES if go_definition_prefix(p) == prefix]
        if not paths:
            fail("no Go package known for " + def_name)
        package = self.go_package(paths[0])
        if type_name not in package.structs:
            fail("Go struct not found for " + def_name)
        return package, type_name

    def add(self, name):
        """Import one definition and everything it references."""
        if name in self.definitions:
            return
        if name in SPECIAL:
            self.definitions[name] = copy.deepcopy(SPECIAL[name])
            return
        if name not in self.schemas:
            fail("definition not in the OpenAPI documents: " + name)
        self.definitions[name] = None  # guards against cycles
        self.definitions[name] = self.convert_struct(name, self.schemas[name])
        for ref in sorted(collect_refs(self.definitions[name])):
            self.add(ref)

    def convert_struct(self, name, src):
        out = self.convert(src, name, top=True)
        if "properties" in src:
            package, type_name = self.go_type(name)
            fields = package.json_fields(type_name)
            if package.inlines_atomic(type_name):
                out["x-kubernetes-map-type"] = "atomic"
            for prop, sub in src["properties"].items():
                field = fields.get(prop)
                if field is None:
                    fail("%s.%s: no Go field" % (name, prop))
                schema = self.convert(sub, "%s.%s" % (name, prop))
                if "default" in schema and not has_default_marker(field):
                    del schema["default"]
                schema.update(marker_overlay(field, schema))
                out["properties"][prop] = schema
            required = sorted(p for p in src["properties"] if is_required(fields[p]))
            if required:
                out["required"] = required
            else:
                out.pop("required", None)
        return out

    def convert(self, src, where, top=False):
        unknown = set(src) - ALLOWED - DROPPED - {"allOf"}
        if unknown:
            fail("%s: keys outside our format: %s" % (where, sorted(unknown)))
        out = {}
        for key, value in src.items():
            if key in DROPPED:
                continue
            if key == "allOf":
                if len(value) != 1 or set(value[0]) != {"$ref"}:
                    fail(where + ": allOf other than a single $ref")
                out["$ref"] = bare_ref(value[0]["$ref"])
            elif key == "$ref":
                out["$ref"] = bare_ref(value)
            elif key == "properties":
                # Only a definition's own top level has properties in Kubernetes' OpenAPI
                # (nested structs are $refs); convert_struct fills them from the Go fields.
                if not top:
                    fail(where + ": nested inline object; not handled")
                out["properties"] = {}
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                item = self.convert(value, where + "[]")
                item.pop("default", None)  # openapi-gen's zero values; no marker can apply
                out[key] = item
            else:
                out[key] = copy.deepcopy(value)
        return out


def collect_refs(schema):
    refs = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref":
                refs.add(value)
            else:
                refs |= collect_refs(value)
    elif isinstance(schema, list):
        for value in schema:
            refs |= collect_refs(value)
    return refs


def expand(schema, definitions, depth=0):
    """Inline every $ref the way the CRD generator does (siblings laid over the copy)."""
    if depth > 64:
        fail("$ref nesting too deep (a cycle?)")
    if isinstance(schema, list):
        return [expand(v, definitions, depth) for v in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        base = expand(definitions[schema["$ref"]], definitions, depth + 1)
        for key, value in schema.items():
            if key == "$ref":
                continue
            value = expand(value, definitions, depth + 1)
            if key == "x-kubernetes-validations":
                base[key] = base.get(key, []) + value
            else:
                base[key] = value
        return base
    return {k: expand(v, definitions, depth + 1) for k, v in schema.items()}


def strip_descriptions(schema):
    if isinstance(schema, dict):
        return {k: strip_descriptions(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [strip_descriptions(v) for v in schema]
    return schema


# ---------------------------------------------------------------------------
# JobSet: cut the CRD's JobSetSpec into one definition per Go type.


def go_definition_prefix(import_path):
    """Kubernetes' naming rule: reverse the domain, keep the rest of the path."""
    domain, _, rest = import_path.partition("/")
    name = ".".join(reversed(domain.split(".")))
    return name + ("." + rest.replace("/", ".") if rest else "")


class JobSetImporter:
    def __init__(self, k8s):
        root = os.path.join(GOMOD, "sigs.k8s.io/jobset@" + JOBSET_VERSION)
        self.go = GoPackage(os.path.join(root, "api/jobset/v1alpha2"))
        self.prefix = go_definition_prefix("sigs.k8s.io/jobset/api/jobset/v1alpha2")
        crd_path = os.path.join(root, "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml")
        with open(crd_path, encoding="utf-8") as f:
            crd = yaml.safe_load(f)
        versions = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2"]
        root = versions[0]["schema"]["openAPIV3Schema"]
        self.spec = strip_descriptions(root["properties"]["spec"])
        self.k8s = k8s
        self.definitions = {}

    def run(self):
        root = self.cut("JobSetSpec", self.spec)
        merged = dict(self.k8s.definitions)
        merged.update(self.definitions)
        if expand({"$ref": root}, merged) != self.spec:
            fail("JobSetSpec does not expand back to the JobSet CRD; see the diff by hand")
        return root

    def cut(self, type_name, crd):
        name = self.prefix + "." + type_name
        if name in self.definitions:
            return name
        self.definitions[name] = None
        out = {k: v for k, v in crd.items() if k != "properties"}
        fields = self.go.json_fields(type_name)
        out["properties"] = {}
        for prop, sub in crd.get("properties", {}).items():
            if prop not in fields:
                fail("JobSet %s.%s: no Go field" % (type_name, prop))
            out["properties"][prop] = self.field(fields[prop], sub)
        self.definitions[name] = out
        return name

    def field(self, field, crd):
        """The field's schema, with the struct below its []/* wrappers made a $ref."""
        gotype = field.type.lstrip("*")
        if gotype.startswith("[]"):
            out = dict(crd)
            out["items"] = self.typed(gotype[2:].lstrip("*"), crd["items"], None)
            return out
        if gotype.startswith("map["):
            fail("JobSet map field %s not handled" % field.json)
        return self.typed(gotype, crd, field)

    def typed(self, gotype, crd, field):
        if "." in gotype:
            alias, _, type_name = gotype.partition(".")
            ref = go_definition_prefix(self.go.imports[alias]) + "." + type_name
            if ref == OBJECT_META:
                ref = EMBEDDED_META
            self.k8s.add(ref)
            base = expand({"$ref": ref}, self.k8s.definitions)
            return self.with_siblings(ref, base, crd)
        if gotype in self.go.structs:
            own = []
            if field is not None:
                own = [parse_xvalidation(v) for k, v in field.markers
                       if k == "kubebuilder:validation:XValidation"]
            body = dict(crd)
            rules = [r for r in body.get("x-kubernetes-validations", []) if r not in own]
            body.pop("x-kubernetes-validations", None)
            if rules:
                body["x-kubernetes-validations"] = rules
            ref = self.cut(gotype, body)
            out = {"$ref": ref}
            if own:
                out["x-kubernetes-validations"] = own
            return out
        return crd  # a scalar or a named string type: keep the CRD's rendering

    @staticmethod
    def with_siblings(ref, base, crd):
        out = {"$ref": ref}
        for key, value in crd.items():
            if base.get(key) != value:
                if key in ("properties", "items", "additionalProperties"):
                    fail("JobSet's copy of %s differs from ours in %s" % (ref, key))
                out[key] = value
        return out


# ---------------------------------------------------------------------------
# Volcano: the one small struct we embed, derived from its Go type.

GO_SCALARS = {
    "string": {"type": "string"},
    "bool": {"type": "boolean"},
    "int": {"type": "integer"},
    "int32": {"type": "integer", "format": "int32"},
    "int64": {"type": "integer", "format": "int64"},
}


def volcano_definitions():
    rel = "volcano.sh/apis@" + VOLCANO_VERSION + "/pkg/apis/scheduling/v1beta1"
    go = GoPackage(os.path.join(GOMOD, rel))
    prefix = go_definition_prefix("volcano.sh/apis/pkg/apis/scheduling/v1beta1")
    type_name = "NetworkTopologySpec"
    out = {"type": "object", "properties": {}}
    required = []
    for prop, field in go.json_fields(type_name).items():
        gotype = field.type.lstrip("*")
        gotype = go.aliases.get(gotype, gotype)
        if gotype not in GO_SCALARS:
            fail("volcano %s.%s: type %s not handled" % (type_name, prop, field.type))
        schema = dict(GO_SCALARS[gotype])
        schema.update(marker_overlay_defaults(field))
        out["properties"][prop] = schema
        if is_required(field):
            required.append(prop)
    if required:
        out["required"] = sorted(required)
    return {prefix + "." + type_name: out}


def marker_overlay_defaults(field):
    out = marker_overlay(field, {})
    for value in marker_values(field.markers, "kubebuilder:default"):
        out["default"] = parse_marker_scalar(value)
    return out


# ---------------------------------------------------------------------------
# Output.


def render(source, definitions):
    """Compact JSON, one definition per line, sorted: stable and diff-friendly."""
    lines = []
    for name in sorted(definitions):
        body = json.dumps(definitions[name], sort_keys=True, separators=(",", ":"))
        lines.append("%s:%s" % (json.dumps(name), body))
    return '{"source":%s,\n"definitions":{\n%s\n}}\n' % (json.dumps(source), ",\n".join(lines))


def build():
    k8s = K8sImporter()
    for name in K8S_ROOTS:
        k8s.add(name)
    jobset = JobSetImporter(k8s)
    jobset.run()
    k8s_source = "k8s.io/kubernetes@%s api/openapi-spec/v3; markers from k8s.io/api@%s, " \
                 "k8s.io/apimachinery@%s" % (K8S_VERSION, K8S_API_VERSION, K8S_API_VERSION)
    return {
        "api/external/k8s.json": render(k8s_source, k8s.definitions),
        "api/external/jobset.json": render(
            "sigs.k8s.io/jobset@" + JOBSET_VERSION, jobset.definitions),
        "api/external/volcano.json": render(
            "volcano.sh/apis@" + VOLCANO_VERSION, volcano_definitions()),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only report stale files")
    args = parser.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    stale = []
    for rel, text in sorted(build().items()):
        path = os.path.join(repo, rel)
        try:
            with open(path, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current == text:
            continue
        stale.append(rel)
        if not args.check:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    for rel in stale:
        print(("stale: " if args.check else "wrote: ") + rel)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
