module hpa-metrics-adapter/bench/loadgen

go 1.22
