{{- define "ferric.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ferric.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* ferric.selector: the labels of one component ("api", "conductor"). */}}
{{- define "ferric.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "ferric.image" -}}
{{- $reg := .root.Values.image.registry -}}
{{- $tag := .root.Values.image.tag | default .root.Chart.AppVersion -}}
{{- if $reg }}{{ $reg }}/{{ end }}{{ .root.Values.image.prefix }}{{ .name }}:{{ $tag }}
{{- end -}}

{{- define "ferric.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "ferric.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{- define "ferric.databaseSecret" -}}
{{- .Values.database.existingSecret | default (printf "%s-database" (include "ferric.fullname" .)) -}}
{{- end -}}

{{- define "ferric.rabbitmqSecret" -}}
{{- .Values.rabbitmq.existingSecret | default (printf "%s-rabbitmq" (include "ferric.fullname" .)) -}}
{{- end -}}

{{/* ferric.check fails the render on values that cannot work. */}}
{{- define "ferric.check" -}}
{{- if not (or .Values.database.connection .Values.database.existingSecret) -}}
{{- fail "database.connection or database.existingSecret is required: Ferric needs an external MySQL database" -}}
{{- end -}}
{{- if not (or .Values.rabbitmq.url .Values.rabbitmq.existingSecret) -}}
{{- fail "rabbitmq.url or rabbitmq.existingSecret is required: the API and the conductors talk over RabbitMQ" -}}
{{- end -}}
{{- $owned := dict "DEFAULT" (list "host") "api" (list "host_ip" "port" "enable_ssl_api") "rpc" (list "transport" "amqp_url") "database" (list "connection") "deploy" (list "http_url" "http_cert_file" "http_key_file") "ssl" (list "cert_file" "key_file") "oslo_messaging_rabbit" (list "ssl" "ssl_ca_file" "ssl_cert_file" "ssl_key_file") -}}
{{- $_ := include "ferric.dbPoolSize" . -}}
{{- range $section, $names := $owned -}}
{{- range $name := $names -}}
{{- if hasKey (index $.Values.config $section | default dict) $name -}}
{{- fail (printf "config.%s.%s is set by the chart; remove it from config" $section $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
ferric.dbPoolSize: each process's [database] max_pool_size, so that every API
replica (the autoscaling maximum when autoscaled) and conductor fits in
database.maxConnections less database.reservedConnections; empty when
config.database sizes the pools itself, after checking that they fit.
*/}}
{{- define "ferric.dbPoolSize" -}}
{{- $db := .Values.config.database | default dict -}}
{{- $api := int .Values.api.replicas -}}
{{- if .Values.api.autoscaling.enabled }}{{ $api = int .Values.api.autoscaling.maxReplicas }}{{ end -}}
{{- $procs := add $api (int .Values.conductor.replicas) -}}
{{- $budget := sub (int .Values.database.maxConnections) (int .Values.database.reservedConnections) -}}
{{- if or (hasKey $db "max_pool_size") (hasKey $db "max_overflow") -}}
{{- $each := add (int (index $db "max_pool_size" | default 10)) (int (index $db "max_overflow" | default 0)) -}}
{{- if gt (mul $procs $each) $budget -}}
{{- fail (printf "%d API replicas and conductors × %d connections each (config.database max_pool_size + max_overflow) exceed database.maxConnections - database.reservedConnections = %d" $procs $each $budget) -}}
{{- end -}}
{{- else -}}
{{- $each := min 10 (div $budget $procs) -}}
{{- if lt $each 1 -}}
{{- fail (printf "%d API replicas and conductors cannot each have a database connection within database.maxConnections - database.reservedConnections = %d" $procs $budget) -}}
{{- end -}}
{{- $each -}}
{{- end -}}
{{- end -}}

{{/* ferric.env: the environment of the API and the conductors: the chart-owned options and the secret ones. */}}
{{- define "ferric.env" -}}
- name: FERRIC_CONFIG
  value: /etc/ferric/ferric.conf
- name: FERRIC_DATABASE_CONNECTION
  valueFrom:
    secretKeyRef:
      name: {{ include "ferric.databaseSecret" . }}
      key: {{ .Values.database.existingSecretKey }}
- name: FERRIC_RPC_AMQP_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "ferric.rabbitmqSecret" . }}
      key: {{ .Values.rabbitmq.existingSecretKey }}
{{- with include "ferric.dbPoolSize" . }}
- name: FERRIC_DATABASE_MAX_POOL_SIZE
  value: {{ . | quote }}
- name: FERRIC_DATABASE_MAX_OVERFLOW
  value: "0"
{{- end }}
{{- end -}}

{{/* ferric.tlsEnv: the broker's TLS options, for the API and the conductors. */}}
{{- define "ferric.tlsEnv" -}}
{{- if .Values.tls.rabbitmqSecret }}
- name: FERRIC_OSLO_MESSAGING_RABBIT_SSL
  value: "true"
- name: FERRIC_OSLO_MESSAGING_RABBIT_SSL_CA_FILE
  value: /etc/ferric/tls/rabbitmq/ca.crt
{{- if .Values.tls.rabbitmqClientCertificate }}
- name: FERRIC_OSLO_MESSAGING_RABBIT_SSL_CERT_FILE
  value: /etc/ferric/tls/rabbitmq/tls.crt
- name: FERRIC_OSLO_MESSAGING_RABBIT_SSL_KEY_FILE
  value: /etc/ferric/tls/rabbitmq/tls.key
{{- end }}
{{- end }}
{{- end -}}

{{/* ferric.tlsMounts and ferric.tlsVolumes: the broker's and the database's CA Secrets, as directories. */}}
{{- define "ferric.tlsMounts" -}}
{{- if .Values.tls.rabbitmqSecret }}
- name: tls-rabbitmq
  mountPath: /etc/ferric/tls/rabbitmq
  readOnly: true
{{- end }}
{{- if .Values.tls.databaseSecret }}
- name: tls-database
  mountPath: /etc/ferric/tls/database
  readOnly: true
{{- end }}
{{- end -}}

{{- define "ferric.tlsVolumes" -}}
{{- if .Values.tls.rabbitmqSecret }}
- name: tls-rabbitmq
  secret:
    secretName: {{ .Values.tls.rabbitmqSecret }}
{{- end }}
{{- if .Values.tls.databaseSecret }}
- name: tls-database
  secret:
    secretName: {{ .Values.tls.databaseSecret }}
{{- end }}
{{- end -}}

{{- define "ferric.envFrom" -}}
{{- if .Values.secretConfig }}
- secretRef:
    name: {{ include "ferric.fullname" . }}-config
{{- end }}
{{- if .Values.existingSecretConfig }}
- secretRef:
    name: {{ .Values.existingSecretConfig }}
{{- end }}
{{- end -}}

{{/* ferric.configValue renders one option value as pkg/config reads it. */}}
{{- define "ferric.configValue" -}}
{{- if kindIs "slice" . -}}
{{- join "," . -}}
{{- else if kindIs "float64" . -}}
{{- int64 . -}}
{{- else -}}
{{- . -}}
{{- end -}}
{{- end -}}
