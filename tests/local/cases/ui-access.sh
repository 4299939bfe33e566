#!/usr/bin/env bash
# Who may use `kftrainer ui`, over real HTTP with curl (issue 24: the dashboard on a shared
# machine). Ours, Jupyter's habits where we follow them:
#   - the token on every address, loopback included (the state directory is 0700; the dashboard
#     must not hand another local user what it hides): the first line printed is the address
#     with ?token= (Jupyter's "http://127.0.0.1:8888/?token=..."); without it 401; ?token= on
#     the page sets a cookie (named for the port: two dashboards on one host keep theirs) and
#     redirects to "/"; "not on loopback" is said only off loopback;
#   - --token-file and $KFTRAINER_UI_TOKEN keep the token out of argv (ps shows argv to every
#     user); a token is 1 to 64 letters, digits, '-' or '_', as the message says;
#   - 70 idle sockets (more than the server's old 64 connection threads) do not keep a client
#     with the token out;
#   - a Cookie field over 1 KiB with the token cookie in it is accepted, and a proxy's own
#     Authorization (a bearer token of its own, as oauth2-proxy passes) does not hide the cookie;
#   - behind a TLS-terminating proxy (X-Forwarded-Proto: https, or --public-url) an https
#     Origin is accepted for actions; through an SSH tunnel (Host: localhost:OTHER-PORT) too;
#     a foreign Origin or Host is refused.
. "$KFT_LOCAL_DIR/lib.sh"

if ! command -v curl >/dev/null; then
	skip "dashboard access" "curl is needed"
	exit 0
fi

# start_ui NAME [ARGS...]: starts `kftrainer ui` on $LISTEN (default a free loopback port) with
# ARGS; sets URL (its first line), BASE (scheme://host:port/), PORT, TOKEN, and UI_ERR (its
# stderr file).
start_ui() {
	local name=$1 out=$KFT_CASE_TMP/$1.out
	shift
	UI_ERR=$KFT_CASE_TMP/$name.err
	"$KFTRAINER" ui --listen "${LISTEN:-127.0.0.1:0}" "$@" >"$out" 2>"$UI_ERR" &
	on_exit "kill $! 2>/dev/null"
	wait_for 30 grep -q token= "$out" || { fail "$name: starts" "no address" "$(cat "$out" "$UI_ERR")"; return 1; }
	URL=$(head -1 "$out")
	BASE=${URL%%\?*}
	PORT=$(sed -E 's|.*:([0-9]+)/.*|\1|' <<<"$BASE")
	TOKEN=${URL##*token=}
}
# code URL [CURL-ARGS...]: the status curl got.
code() { curl -s -o /dev/null -w '%{http_code}' -m 10 "$@"; }

start_ui plain || exit 0
expect_contains "on loopback the first line is the address with ?token=" "$URL" "http://127.0.0.1:$PORT/?token="
if [[ $TOKEN =~ ^[0-9a-f]{32}$ ]]; then pass "the token made is 32 hex digits"; else fail "the token made is 32 hex digits" "got '$TOKEN'"; fi
expect_not_contains "on loopback, no 'not on loopback' line" "$(cat "$UI_ERR")" "not on loopback"
expect_eq "loopback: no token, 401" 401 "$(code "${BASE}api/jobs")"
expect_eq "loopback: a wrong token, 401" 401 "$(code "${BASE}api/jobs?token=x$TOKEN")"
expect_eq "the token as ?token=: 200" 200 "$(code "${BASE}api/jobs?token=$TOKEN")"
expect_eq "the token as a bearer token: 200" 200 "$(code -H "Authorization: Bearer $TOKEN" "${BASE}api/jobs")"
hdr=$(curl -s -D - -o /dev/null -m 10 "$URL")
expect_contains "?token= on the page: 303 to /" "$hdr" "Location: /"
expect_contains "... with the token in a cookie named for the port" "$hdr" "Set-Cookie: kft_ui_token_$PORT=$TOKEN; Path=/; HttpOnly; SameSite=Strict"
expect_eq "the cookie alone: 200" 200 "$(code -H "Cookie: kft_ui_token_$PORT=$TOKEN" "${BASE}api/jobs")"

pad=$(head -c 3000 /dev/zero | tr '\0' a)
expect_eq "a 3 KiB Cookie field with the token cookie in it: 200" 200 \
	"$(code -H "Cookie: jupyter=$pad; kft_ui_token_$PORT=$TOKEN; other=1" "${BASE}api/jobs")"
expect_eq "a stale cookie of the same name beside the right one: 200" 200 \
	"$(code -H "Cookie: kft_ui_token_$PORT=old; kft_ui_token_$PORT=$TOKEN" "${BASE}api/jobs")"
expect_eq "a proxy's own Authorization does not hide the cookie: 200" 200 \
	"$(code -H 'Authorization: Bearer the-proxys-own' -H "Cookie: kft_ui_token_$PORT=$TOKEN" "${BASE}api/jobs")"

# 70 idle sockets, held by another process, and a request with the token
"$KFT_PYTHON" "$KFT_LOCAL_DIR/flood.py" "127.0.0.1:$PORT" 70 --hold >"$KFT_CASE_TMP/idle" &
idle=$!
on_exit "kill $idle 2>/dev/null"
if wait_for 30 grep -q ready "$KFT_CASE_TMP/idle"; then
	expect_eq "70 idle sockets open: a request with the token is answered" 200 \
		"$(code -m 5 "${BASE}api/jobs?token=$TOKEN")"
else
	fail "70 idle sockets open: a request with the token is answered" "could not open 70"
fi
kill "$idle"
wait "$idle" 2>/dev/null

# actions: CSRF token and Origin
csrf=$(curl -s -m 10 "${BASE}api/session?token=$TOKEN" | jq -r .csrf)
act() { # act ORIGIN [CURL-ARGS...]: a suspend of a job that does not exist
	local origin=$1
	shift
	code -X POST -H "X-KFT-CSRF: $csrf" -H "Origin: $origin" -H "Cookie: kft_ui_token_$PORT=$TOKEN" \
		"$@" "${BASE}api/jobs/default/nope/suspend"
}
expect_eq "an action from our own origin reaches the API (404: no such job)" 404 "$(act "http://127.0.0.1:$PORT")"
expect_eq "an action from another origin: 403" 403 "$(act "http://evil.example")"
expect_eq "an https Origin without a proxy saying so: 403" 403 "$(act "https://127.0.0.1:$PORT")"
expect_eq "behind a TLS proxy (X-Forwarded-Proto: https), the https Origin: accepted" 404 \
	"$(act "https://127.0.0.1:$PORT" -H 'X-Forwarded-Proto: https')"
expect_eq "an SSH tunnel on another local port (Host: localhost:9999): accepted" 404 \
	"$(act "http://localhost:9999" -H 'Host: localhost:9999')"
expect_eq "a Host that is not a loopback name: 403 (DNS rebinding)" 403 \
	"$(code -H 'Host: evil.example' -H "Cookie: kft_ui_token_$PORT=$TOKEN" "${BASE}api/jobs")"

# --public-url, --token-file, $KFTRAINER_UI_TOKEN, the token's alphabet
printf 'From-File_0123\n' >"$KFT_CASE_TMP/token"
port=$(free_port)
LISTEN=127.0.0.1:$port start_ui public --token-file "$KFT_CASE_TMP/token" --public-url https://dash.example.com || exit 0
expect_eq "--public-url and --token-file: the address printed" "https://dash.example.com/?token=From-File_0123" "$URL"
TOKEN=From-File_0123 BASE=http://127.0.0.1:$port/ PORT=$port
csrf=$(curl -s -m 10 "${BASE}api/session?token=$TOKEN" | jq -r .csrf)
expect_eq "the public URL's origin and host: accepted" 404 \
	"$(act https://dash.example.com -H 'Host: dash.example.com')"
hdr=$(curl -s -D - -o /dev/null -m 10 -H 'Host: dash.example.com' "${BASE}?token=$TOKEN")
expect_contains "behind https the cookie is Secure" "$hdr" "SameSite=Strict; Secure"

KFTRAINER_UI_TOKEN=from-env start_ui env || exit 0
expect_eq "\$KFTRAINER_UI_TOKEN is the token" from-env "$TOKEN"
expect_exit "a token with a '.': refused" 2 kft ui --listen 127.0.0.1:0 --token a.b
expect_contains "... saying which characters a token may have" "$KFT_ERR" "1 to 64 letters, digits, '-' or '_'"
start_ui letters --token Zz-_9 || exit 0
expect_eq "a token of letters beyond hex, '-' and '_': accepted" 200 "$(code "${BASE}api/jobs?token=Zz-_9")"
