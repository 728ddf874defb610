{{/* Service identity between services (docs/security.md): each component presents the
     certificate of its role (its component name) from a Secret mounted at /etc/machiavelox/tls
     (tls.crt, tls.key, ca.crt: the layout of kubernetes.io/tls Secrets and of cert-manager),
     and serves health in plaintext on global.healthPort for the probes and `helm test`. */}}

{{- define "machiavelox.tls.on" -}}
{{- if eq .Values.global.tls.internal "mtls" -}}true{{- end -}}
{{- end -}}

{{/* The Secret of a role: global.tls.secrets.<role>, or <fullname>-tls-<role>. */}}
{{- define "machiavelox.tls.secret" -}}
{{- $key := .component | replace "-" "" | replace "resultsreader" "resultsReader" | replace "bothost" "botHost" -}}
{{- $given := index (default dict .root.Values.global.tls.secrets) $key | default "" -}}
{{- default (printf "%s-tls-%s" (include "machiavelox.fullname" .root) .component) $given -}}
{{- end -}}

{{- define "machiavelox.tls.env" -}}
- name: MACHIAVELOX_INTERNAL_TLS
  value: {{ .root.Values.global.tls.internal | quote }}
{{- if include "machiavelox.tls.on" .root }}
- name: MACHIAVELOX_TLS_CA
  value: /etc/machiavelox/tls/ca.crt
- name: MACHIAVELOX_TLS_CERT
  value: /etc/machiavelox/tls/tls.crt
- name: MACHIAVELOX_TLS_KEY
  value: /etc/machiavelox/tls/tls.key
{{- end }}
- name: MACHIAVELOX_HEALTH_PORT
  value: {{ .root.Values.global.healthPort | quote }}
{{- end -}}

{{- define "machiavelox.tls.volumeMount" -}}
{{- if include "machiavelox.tls.on" .root }}
- name: tls
  mountPath: /etc/machiavelox/tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "machiavelox.tls.volume" -}}
{{- if include "machiavelox.tls.on" .root }}
- name: tls
  secret:
    secretName: {{ include "machiavelox.tls.secret" . }}
    defaultMode: 288  # 0440: the pod's user and group (fsGroup)
{{- end }}
{{- end -}}

{{/* The health port must be a port of its own in every pod. */}}
{{- define "machiavelox.tls.checkHealthPort" -}}
{{- $health := int .root.Values.global.healthPort -}}
{{- if or (eq $health (int .port)) (eq $health (int .root.Values.global.metrics.port)) -}}
{{- fail (printf "global.healthPort (%d) must differ from %s.port and global.metrics.port: it is a port of its own, in plaintext, serving only health" $health .component) -}}
{{- end -}}
{{- end -}}
