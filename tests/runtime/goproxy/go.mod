module hpa-metrics-adapter/tests/runtime/goproxy

go 1.22
