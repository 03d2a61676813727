//go:build tools

// Package prometheusadapter pins prometheus-adapter, the second adapter of the delegation
// end-to-end test (tests/e2e/delegation_e2e_test.ts): `go build
// sigs.k8s.io/prometheus-adapter/cmd/adapter`, from the module proxy, cached by
// tests/e2e/prometheus_adapter_tool.ts.
package prometheusadapter

import (
	_ "sigs.k8s.io/prometheus-adapter/cmd/adapter"
)
