{{/* Names, labels and the pieces every component's pod shares. */}}

{{- define "machiavelox.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "machiavelox.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "<fullname>-<component>" (fullname is at most 40 characters, so this fits a DNS label). */}}
{{- define "machiavelox.component" -}}
{{- printf "%s-%s" (include "machiavelox.fullname" .root) .component -}}
{{- end -}}

{{- define "machiavelox.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "machiavelox.selectorLabels" -}}
app.kubernetes.io/name: {{ include "machiavelox.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Labels of every object of a component; `machiavelox.io/job` names its Prometheus job. */}}
{{- define "machiavelox.labels" -}}
{{ include "machiavelox.selectorLabels" . }}
app.kubernetes.io/part-of: machiavelox
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ include "machiavelox.chart" .root }}
machiavelox.io/job: machiavelox-{{ .component }}
{{- end -}}

{{- define "machiavelox.image" -}}
{{- $image := .Values.global.image -}}
{{- printf "%s:%s" $image.repository (default .Chart.AppVersion $image.tag) -}}
{{- end -}}

{{/* In-cluster addresses. */}}
{{- define "machiavelox.address" -}}
{{- $values := index .root.Values .component -}}
{{- printf "%s.%s.svc.%s:%d" (include "machiavelox.component" .) .root.Release.Namespace .root.Values.global.clusterDomain (int $values.port) -}}
{{- end -}}

{{- define "machiavelox.table.headless" -}}
{{- printf "%s-headless" (include "machiavelox.component" (dict "root" . "component" "table")) -}}
{{- end -}}

{{/* A shard's address, `{shard}` standing for its pod name (the shard id). */}}
{{- define "machiavelox.table.template" -}}
{{- printf "{shard}.%s.%s.svc.%s:%d" (include "machiavelox.table.headless" .) .Release.Namespace .Values.global.clusterDomain (int .Values.table.port) -}}
{{- end -}}

{{/* How many shards matchmaking must know: the most there can ever be. */}}
{{- define "machiavelox.table.maxShards" -}}
{{- if .Values.controller.enabled -}}
{{- max (int .Values.controller.maxReplicas) (int .Values.table.replicas) -}}
{{- else -}}
{{- int .Values.table.replicas -}}
{{- end -}}
{{- end -}}

{{/* shard-0=address,shard-1=address,... for every shard that can exist. */}}
{{- define "machiavelox.table.list" -}}
{{- $sts := include "machiavelox.component" (dict "root" . "component" "table") -}}
{{- $template := include "machiavelox.table.template" . -}}
{{- $items := list -}}
{{- range $i := until (int (include "machiavelox.table.maxShards" .)) -}}
{{- $id := printf "%s-%d" $sts $i -}}
{{- $items = append $items (printf "%s=%s" $id (replace "{shard}" $id $template)) -}}
{{- end -}}
{{- join "," $items -}}
{{- end -}}

{{- define "machiavelox.tokenSecret" -}}
{{- default (printf "%s-token" (include "machiavelox.fullname" .)) .Values.global.tokenKey.existingSecret -}}
{{- end -}}

{{- define "machiavelox.postgresql.secret" -}}
{{- default (printf "%s-postgresql" (include "machiavelox.fullname" .)) .Values.postgresql.existingSecret -}}
{{- end -}}

{{/* The password of the PostgreSQL user, as libpq reads it (PGPASSWORD), from its Secret. */}}
{{- define "machiavelox.postgresql.passwordEnv" -}}
- name: PGPASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "machiavelox.postgresql.secret" . }}
      key: {{ .Values.postgresql.existingSecretPasswordKey }}
{{- end -}}

{{/* The URL of `postgresql.*` (scoring's results, the shards' journal): no password in it,
     libpq takes it from PGPASSWORD. */}}
{{- define "machiavelox.postgresql.url" -}}
{{- with .Values.postgresql -}}
{{- printf "postgresql://%s@%s:%d/%s?sslmode=%s" (urlquery .user) .host (int .port) (urlquery .database) .sslmode -}}
{{- end -}}
{{- end -}}

{{/* Changes with `postgresql.*` (a pod annotation): pods restart when its password or server
     changes, since they read them at start. */}}
{{- define "machiavelox.postgresql.checksum" -}}
{{- .Values.postgresql | toJson | sha256sum -}}
{{- end -}}

{{- define "machiavelox.redis.secret" -}}
{{- default (printf "%s-redis" (include "machiavelox.fullname" .)) .Values.redis.existingSecret -}}
{{- end -}}

{{- define "machiavelox.redis.hasPassword" -}}
{{- if or .Values.redis.existingSecret .Values.redis.password -}}true{{- end -}}
{{- end -}}

{{/* The pod's metadata: labels, scrape annotations, extra annotations. */}}
{{- define "machiavelox.podMetadata" -}}
metadata:
  labels:
    {{- include "machiavelox.labels" . | nindent 4 }}
    {{- with .root.Values.global.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    {{- if .root.Values.global.metrics.scrapeAnnotations }}
    prometheus.io/scrape: "true"
    prometheus.io/port: {{ .root.Values.global.metrics.port | quote }}
    prometheus.io/path: /metrics
    {{- end }}
    {{- with .checksum }}
    checksum/config: {{ . }}
    {{- end }}
    {{- with .root.Values.global.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/* Environment every container gets: logs, grace, metrics, tracing. */}}
{{- define "machiavelox.commonEnv" -}}
- name: MACHIAVELOX_LOG_LEVEL
  value: {{ .root.Values.global.logLevel | quote }}
- name: MACHIAVELOX_GRACE_S
  value: {{ .root.Values.global.graceSeconds | quote }}
- name: MACHIAVELOX_METRICS_PORT
  value: {{ .root.Values.global.metrics.port | quote }}
- name: OTEL_SERVICE_NAME
  value: machiavelox-{{ .component }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: "k8s.namespace.name={{ .root.Release.Namespace }},k8s.pod.name=$(POD_NAME),service.instance.id=$(POD_NAME)"
{{- with .root.Values.global.otel }}
{{- if .endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .endpoint | quote }}
{{- end }}
- name: OTEL_TRACES_SAMPLER
  value: {{ .sampler | quote }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ .samplerArg | quote }}
{{- end }}
{{ include "machiavelox.tls.env" . }}
{{- end -}}

{{- define "machiavelox.podNameEnv" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- end -}}

{{- define "machiavelox.tokenEnv" -}}
- name: MACHIAVELOX_TOKEN_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "machiavelox.tokenSecret" . }}
      key: {{ .Values.global.tokenKey.existingSecretKey }}
{{- end -}}

{{/* The player tokens a service accepts (gateway and matchmaking alike, docs/security.md):
     the token mode, the token key unless the mode is oidc, the identity provider unless it is
     hmac. Refuses an identity provider without issuer or audience. */}}
{{- define "machiavelox.identityEnv" -}}
{{- $id := .Values.global.identity -}}
{{- if and (ne $id.mode "hmac") (or (not $id.oidc.issuer) (not $id.oidc.audience)) -}}
{{- fail (printf "global.identity.mode is %s: set global.identity.oidc.issuer and global.identity.oidc.audience (the identity provider whose tokens are accepted)" $id.mode) -}}
{{- end -}}
- name: MACHIAVELOX_TOKEN_MODE
  value: {{ $id.mode | quote }}
{{- if ne $id.mode "oidc" }}
{{ include "machiavelox.tokenEnv" . }}
{{- end }}
{{- if ne $id.mode "hmac" }}
{{- with $id.oidc }}
- name: MACHIAVELOX_OIDC_ISSUER
  value: {{ .issuer | quote }}
- name: MACHIAVELOX_OIDC_AUDIENCE
  value: {{ .audience | quote }}
- name: MACHIAVELOX_OIDC_JWKS_URL
  value: {{ .jwksUrl | quote }}
- name: MACHIAVELOX_OIDC_LEEWAY_S
  value: {{ .leewaySeconds | quote }}
- name: MACHIAVELOX_OIDC_PLAYER_CLAIM
  value: {{ .playerClaim | quote }}
- name: MACHIAVELOX_OIDC_JWKS_REFRESH_S
  value: {{ .jwksRefreshSeconds | quote }}
- name: MACHIAVELOX_OIDC_FETCH_TIMEOUT_S
  value: {{ .fetchTimeoutSeconds | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The development Login: only in a development environment, only with development tokens. */}}
{{- define "machiavelox.devLoginEnv" -}}
{{- $login := .Values.gateway.devLogin -}}
{{- if and $login.enabled (ne .Values.global.environment "development") -}}
{{- fail (printf "gateway.devLogin.enabled is true but global.environment is %s: the development Login gives anyone a token for any player, so it is refused outside global.environment=development" .Values.global.environment) -}}
{{- end -}}
{{- if and $login.enabled (eq .Values.global.identity.mode "oidc") -}}
{{- fail "gateway.devLogin.enabled needs global.identity.mode hmac or both: the development Login mints development (HMAC) tokens" -}}
{{- end -}}
- name: MACHIAVELOX_GATEWAY_DEV_LOGIN
  value: {{ $login.enabled | quote }}
- name: MACHIAVELOX_GATEWAY_LOGIN_RATE
  value: {{ $login.rate | quote }}
- name: MACHIAVELOX_GATEWAY_LOGIN_BURST
  value: {{ $login.burst | quote }}
{{- end -}}

{{/* Kubernetes' own gRPC probes on the standard health service (grpc.health.v1), on the
     plaintext health port (they cannot present a client certificate: _tls.tpl). */}}
{{- define "machiavelox.probes" -}}
startupProbe:
  grpc:
    port: {{ .root.Values.global.healthPort }}
  periodSeconds: 2
  failureThreshold: 30
readinessProbe:
  grpc:
    port: {{ .root.Values.global.healthPort }}
  periodSeconds: 5
  failureThreshold: 2
livenessProbe:
  grpc:
    port: {{ .root.Values.global.healthPort }}
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
{{- end -}}

{{- define "machiavelox.ports" -}}
{{- include "machiavelox.tls.checkHealthPort" . }}
ports:
  - name: grpc
    containerPort: {{ .port }}
    protocol: TCP
  - name: metrics
    containerPort: {{ .root.Values.global.metrics.port }}
    protocol: TCP
  - name: health
    containerPort: {{ .root.Values.global.healthPort }}
    protocol: TCP
{{- end -}}

{{/* preStop: a sleep (Kubernetes' own action, no shell needed) before SIGTERM. */}}
{{- define "machiavelox.lifecycle" -}}
lifecycle:
  preStop:
    sleep:
      seconds: {{ .values.preStopSleepSeconds }}
{{- end -}}

{{/* The grace period must cover the preStop sleep and the services' own grace. */}}
{{- define "machiavelox.checkGrace" -}}
{{- $need := add (int (default 0 .values.preStopSleepSeconds)) (int (ceil .root.Values.global.graceSeconds)) -}}
{{- if le (int .values.terminationGracePeriodSeconds) (int $need) -}}
{{- fail (printf "%s.terminationGracePeriodSeconds (%d) must exceed %s.preStopSleepSeconds + global.graceSeconds (%d): Kubernetes would kill the pod before it has stopped gracefully" .component (int .values.terminationGracePeriodSeconds) .component (int $need)) -}}
{{- end -}}
{{- end -}}

{{/* A stopping shard serves its tables for this long (MACHIAVELOX_TABLE_DRAIN_S), then stops
     gracefully (global.graceSeconds), then waits for the results in flight to scoring
     (table.reportWaitSeconds): all of it must fit in the grace period. */}}
{{- define "machiavelox.table.drainSeconds" -}}
{{- $t := .Values.table -}}
{{- $stop := add (int $t.preStopSleepSeconds) (int (ceil .Values.global.graceSeconds)) (int (ceil $t.reportWaitSeconds)) -}}
{{- if kindIs "invalid" $t.drainSeconds -}}
{{- max 0 (sub (int $t.terminationGracePeriodSeconds) (add $stop 30)) -}}
{{- else if le (int $t.terminationGracePeriodSeconds) (add $stop (int $t.drainSeconds)) -}}
{{- fail (printf "table.terminationGracePeriodSeconds (%d) must exceed table.preStopSleepSeconds + table.drainSeconds + global.graceSeconds + table.reportWaitSeconds (%d): Kubernetes would kill shards while they still serve tables" (int $t.terminationGracePeriodSeconds) (add $stop (int $t.drainSeconds))) -}}
{{- else -}}
{{- int $t.drainSeconds -}}
{{- end -}}
{{- end -}}

{{- define "machiavelox.containerSecurity" -}}
securityContext:
  {{- toYaml .Values.global.securityContext | nindent 2 }}
{{- end -}}

{{/* Scheduling: node selector, tolerations, affinity, topology spread. */}}
{{- define "machiavelox.scheduling" -}}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if .root.Values.global.topologySpread.enabled }}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "machiavelox.selectorLabels" . | nindent 8 }}
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "machiavelox.selectorLabels" . | nindent 8 }}
{{- end }}
{{- end -}}

{{/* The pod-level spec shared by every component (service account without API token). */}}
{{- define "machiavelox.podCommon" -}}
serviceAccountName: {{ .serviceAccount | default (include "machiavelox.fullname" .root) }}
automountServiceAccountToken: {{ .automountToken | default false }}
enableServiceLinks: false
terminationGracePeriodSeconds: {{ .values.terminationGracePeriodSeconds }}
securityContext:
  {{- toYaml .root.Values.global.podSecurityContext | nindent 2 }}
{{- with .root.Values.global.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- include "machiavelox.scheduling" . }}
{{- end -}}

