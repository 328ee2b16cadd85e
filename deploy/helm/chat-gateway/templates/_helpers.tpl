{{/* The release's resource name: the release name, with the chart's appended unless it has it. */}}
{{- define "chat-gateway.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "chat-gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "chat-gateway.labels" -}}
{{ include "chat-gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Values that cannot work together fail the install with a sentence, not a broken pod. */}}
{{- define "chat-gateway.validate" -}}
{{- if not (or (eq .Values.storeMode "shared") (eq .Values.storeMode "sqlite")) -}}
{{- fail "storeMode must be shared or sqlite" -}}
{{- end -}}
{{- if and (eq .Values.storeMode "sqlite") .Values.autoscaling.enabled -}}
{{- fail "storeMode sqlite runs one replica: autoscaling needs storeMode shared (PostgreSQL and Redis)" -}}
{{- end -}}
{{- if and (eq .Values.storeMode "shared") (not .Values.existingSecret) (not .Values.secretEnv.DATABASE_URL) -}}
{{- fail "storeMode shared needs DATABASE_URL and REDIS_URL: set secretEnv.DATABASE_URL and secretEnv.REDIS_URL, or existingSecret" -}}
{{- end -}}
{{- if and (eq .Values.storeMode "shared") (not .Values.existingSecret) (not .Values.secretEnv.REDIS_URL) -}}
{{- fail "storeMode shared needs REDIS_URL (without it each replica keeps its own rate limits): set secretEnv.REDIS_URL, or existingSecret" -}}
{{- end -}}
{{- end -}}
