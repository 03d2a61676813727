{{/*
The chart's name (nameOverride wins), as the app.kubernetes.io/name label.
*/}}
{{- define "hpa-metrics-adapter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of every object: fullnameOverride, else the release name when it already contains the
chart's name (`helm install hpa-metrics-adapter ...` gives the kustomize base's names), else
RELEASE-NAME.
*/}}
{{- define "hpa-metrics-adapter.fullname" -}}
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

{{- define "hpa-metrics-adapter.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
What the Deployment, the Service, the PodDisruptionBudget and the anti-affinity select.
*/}}
{{- define "hpa-metrics-adapter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hpa-metrics-adapter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "hpa-metrics-adapter.labels" -}}
{{ include "hpa-metrics-adapter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "hpa-metrics-adapter.chart" . }}
{{- end }}

{{- define "hpa-metrics-adapter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "hpa-metrics-adapter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The adapter's service account as an RBAC subject.
*/}}
{{- define "hpa-metrics-adapter.subject" -}}
- kind: ServiceAccount
  name: {{ include "hpa-metrics-adapter.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end }}

{{/*
Whether the aggregator verifies the serving certificate: "true" with tls.enable or certManager.
*/}}
{{- define "hpa-metrics-adapter.verifiedTls" -}}
{{- if or .Values.tls.enable .Values.certManager.enabled }}true{{ end }}
{{- end }}

{{/*
The Secret holding tls.crt and tls.key: tls.secretName, else FULLNAME-tls (made by the chart from
tls.certificate and tls.key, or by cert-manager).
*/}}
{{- define "hpa-metrics-adapter.tlsSecretName" -}}
{{- if and .Values.tls.enable .Values.tls.secretName }}
{{- .Values.tls.secretName }}
{{- else }}
{{- printf "%s-tls" (include "hpa-metrics-adapter.fullname" .) }}
{{- end }}
{{- end }}

{{/*
Values that cannot be checked by values.schema.json alone: fail the render with what is wrong.
*/}}
{{- define "hpa-metrics-adapter.validate" -}}
{{- if and .Values.tls.enable .Values.certManager.enabled }}
{{- fail "tls.enable and certManager.enabled are both true: choose one source of the serving certificate" }}
{{- end }}
{{- if .Values.tls.enable }}
{{- if not .Values.tls.ca }}
{{- fail "tls.ca is empty: tls.enable needs the PEM of the CA that becomes every APIService's caBundle" }}
{{- end }}
{{- if and .Values.tls.secretName (or .Values.tls.certificate .Values.tls.key) }}
{{- fail (printf "tls.secretName %q and tls.certificate/tls.key are both set: give an existing Secret or the PEMs, not both" .Values.tls.secretName) }}
{{- end }}
{{- if and (not .Values.tls.secretName) (not (and .Values.tls.certificate .Values.tls.key)) }}
{{- fail "tls.enable needs tls.secretName (an existing Secret with tls.crt and tls.key) or both tls.certificate and tls.key" }}
{{- end }}
{{- end }}
{{- if and .Values.aws.roleArn (not .Values.aws.enable) }}
{{- fail (printf "aws.roleArn %q is set but aws.enable is false: SQS metrics are off" .Values.aws.roleArn) }}
{{- end }}
{{- if and .Values.aws.enable (not .Values.aws.region) }}
{{- fail "aws.region is empty: aws.enable needs at least one region" }}
{{- end }}
{{- if and .Values.prometheus.tokenSecret.name (not .Values.prometheus.url) }}
{{- fail (printf "prometheus.tokenSecret.name %q is set but prometheus.url is empty" .Values.prometheus.tokenSecret.name) }}
{{- end }}
{{- $aliases := dict }}
{{- range .Values.prometheus.additionalServers }}
{{- if hasKey $aliases .alias }}
{{- fail (printf "prometheus.additionalServers: alias %q repeated" .alias) }}
{{- end }}
{{- $_ := set $aliases .alias true }}
{{- end }}
{{- if and .Values.serviceMonitor.enabled (not .Values.metrics.port) }}
{{- fail "serviceMonitor.enabled needs metrics.port" }}
{{- end }}
{{- $d := .Values.delegation }}
{{- range $option := list "caSecret" "clientCertSecret" "tokenSecret" }}
{{- $s := index $d $option }}
{{- if and (not (kindIs "invalid" $s)) (not $s.name) }}
{{- fail (printf "delegation.%s.name is empty: delegation.%s names an existing Secret in the release namespace (null: none)" $option $option) }}
{{- end }}
{{- end }}
{{- if and $d.caSecret $d.insecureSkipTLSVerify }}
{{- fail (printf "delegation.caSecret %q and delegation.insecureSkipTLSVerify are both set: verify the delegates with the CA or not at all" $d.caSecret.name) }}
{{- end }}
{{- if and $d.clientCertSecret $d.tokenSecret }}
{{- fail (printf "delegation.clientCertSecret %q and delegation.tokenSecret %q are both set: the delegates get a client certificate or a token, not both" $d.clientCertSecret.name $d.tokenSecret.name) }}
{{- end }}
{{- if and .Values.admissionWebhook.enabled (not (include "hpa-metrics-adapter.verifiedTls" .)) }}
{{- fail "admissionWebhook.enabled needs certManager.enabled or tls.enable: kube-apiserver verifies a webhook's certificate with its caBundle" }}
{{- end }}
{{- if and .Values.sharding.enabled (not (include "hpa-metrics-adapter.verifiedTls" .)) }}
{{- fail "sharding.enabled needs certManager.enabled or tls.enable: the replicas verify each other's serving certificates with its ca.crt" }}
{{- end }}
{{- if not (include "hpa-metrics-adapter.delegating" .) }}
{{- if $d.caSecret }}
{{- fail (printf "delegation.caSecret %q is set but delegation.externalMetrics and delegation.customMetrics are empty" $d.caSecret.name) }}
{{- end }}
{{- if $d.insecureSkipTLSVerify }}
{{- fail "delegation.insecureSkipTLSVerify is true but delegation.externalMetrics and delegation.customMetrics are empty" }}
{{- end }}
{{- if $d.clientCertSecret }}
{{- fail (printf "delegation.clientCertSecret %q is set but delegation.externalMetrics and delegation.customMetrics are empty" $d.clientCertSecret.name) }}
{{- end }}
{{- if $d.tokenSecret }}
{{- fail (printf "delegation.tokenSecret %q is set but delegation.externalMetrics and delegation.customMetrics are empty" $d.tokenSecret.name) }}
{{- end }}
{{- if $d.discoveryInterval }}
{{- fail (printf "delegation.discoveryInterval %q is set but delegation.externalMetrics and delegation.customMetrics are empty" $d.discoveryInterval) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Whether the adapter delegates (deploy/components/delegation): "true" with either delegate URL.
*/}}
{{- define "hpa-metrics-adapter.delegating" -}}
{{- if or .Values.delegation.externalMetrics .Values.delegation.customMetrics }}true{{ end }}
{{- end }}

{{/*
The container's arguments: the kustomize base's, then one block per feature in the order of
values.yaml, then extraArgs (the last value of a flag wins).
*/}}
{{- define "hpa-metrics-adapter.args" -}}
- --secure-port={{ .Values.service.internalPort }}
- --cert-dir=/tmp/certs
- --metrics-address=:{{ .Values.metrics.port }}
{{- if .Values.leaderElection.enabled }}
- --leader-elect=true
- --leader-elect-resource-namespace=$(POD_NAMESPACE)
{{- else }}
- --leader-elect=false
{{- end }}
{{- if .Values.scalingSchedules.enabled }}
- --scaling-schedule
{{- else }}
- --scaling-schedule=false
{{- end }}
{{- if not (kindIs "invalid" .Values.logLevel) }}
- --v={{ .Values.logLevel }}
{{- end }}
{{- if not .Values.statusPage.enabled }}
- --status-page=false
{{- end }}
{{- with .Values.prometheus.url }}
- {{ printf "--prometheus-server=%s" . | quote }}
{{- end }}
{{- with .Values.prometheus.queryTimeout }}
- {{ printf "--prometheus-query-timeout=%s" . | quote }}
{{- end }}
{{- if .Values.prometheus.tokenSecret.name }}
- --prometheus-server-token-file=/etc/hpa-metrics-adapter/prometheus/token
{{- end }}
{{- range $i, $s := .Values.prometheus.additionalServers }}
- {{ printf "--additional-prometheus-server=%s=%s" $s.alias $s.url | quote }}
{{- if and $s.tokenSecret $s.tokenSecret.name }}
- {{ printf "--additional-prometheus-server-token-file=%s=/etc/hpa-metrics-adapter/prometheus-%d/token" $s.alias $i | quote }}
{{- end }}
{{- end }}
{{- if .Values.aws.enable }}
- --aws-external-metrics
- {{ printf "--aws-region=%s" .Values.aws.region | quote }}
{{- end }}
{{- if include "hpa-metrics-adapter.verifiedTls" . }}
- --tls-cert-file=/etc/hpa-metrics-adapter/tls/tls.crt
- --tls-private-key-file=/etc/hpa-metrics-adapter/tls/tls.key
{{- end }}
{{- if .Values.replicaGuard.enabled }}
- --estafette-hpa-scaler
{{- with .Values.replicaGuard.interval }}
- {{ printf "--estafette-hpa-scaler-interval=%s" . | quote }}
{{- end }}
{{- with .Values.replicaGuard.prometheusUrl }}
- {{ printf "--estafette-prometheus-server-url=%s" . | quote }}
{{- end }}
{{- end }}
{{- if .Values.knative.enabled }}
- --knative-autoscaler
{{- with .Values.knative.prometheusAddress }}
- {{ printf "--knative-prometheus-address=%s" . | quote }}
{{- end }}
{{- with .Values.knative.clusterTriggerAuthenticationNamespace }}
- {{ printf "--knative-cluster-trigger-authentication-namespace=%s" . | quote }}
{{- end }}
{{- end }}
{{- if .Values.prometheusAdapter.config }}
- --prometheus-adapter-config=/etc/hpa-metrics-adapter/prometheus-adapter/config.yaml
{{- end }}
{{- if .Values.keda.scaledObjects }}
- --keda-scaled-objects
{{- with .Values.keda.scaledObjectSelector }}
- {{ printf "--keda-scaled-object-selector=%s" . | quote }}
{{- end }}
{{- with .Values.keda.clusterObjectNamespace }}
- {{ printf "--keda-cluster-object-namespace=%s" . | quote }}
{{- end }}
{{- end }}
{{- if include "hpa-metrics-adapter.delegating" . }}
{{- with .Values.delegation.externalMetrics }}
- {{ printf "--delegate-external-metrics=%s" . | quote }}
{{- end }}
{{- with .Values.delegation.customMetrics }}
- {{ printf "--delegate-custom-metrics=%s" . | quote }}
{{- end }}
{{- if .Values.delegation.caSecret }}
- {{ printf "--delegate-ca-file=/etc/hpa-metrics-adapter/delegate-ca/%s" (.Values.delegation.caSecret.key | default "ca.crt") | quote }}
{{- end }}
{{- if .Values.delegation.insecureSkipTLSVerify }}
- --delegate-insecure-skip-tls-verify
{{- end }}
{{- if .Values.delegation.clientCertSecret }}
- --delegate-client-cert-file=/etc/hpa-metrics-adapter/delegate-client/tls.crt
- --delegate-client-key-file=/etc/hpa-metrics-adapter/delegate-client/tls.key
{{- end }}
{{- if .Values.delegation.tokenSecret }}
- --delegate-token-file=/etc/hpa-metrics-adapter/delegate-token/token
{{- end }}
{{- with .Values.delegation.discoveryInterval }}
- {{ printf "--delegate-discovery-interval=%s" . | quote }}
{{- end }}
{{- end }}
{{- if .Values.sharding.enabled }}
- --shard-collection
- --shard-peer-ca-file=/etc/hpa-metrics-adapter/tls/ca.crt
- {{ printf "--shard-peer-server-name=%s.%s.svc" (include "hpa-metrics-adapter.fullname" .) .Release.Namespace | quote }}
{{- with .Values.sharding.leaseDuration }}
- {{ printf "--shard-lease-duration=%s" . | quote }}
{{- end }}
{{- with .Values.sharding.retryPeriod }}
- {{ printf "--shard-retry-period=%s" . | quote }}
{{- end }}
{{- end }}
{{- if .Values.admissionWebhook.enabled }}
- --admission-webhook
{{- if .Values.admissionWebhook.denyInvalid }}
- --admission-deny-invalid
{{- end }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}
