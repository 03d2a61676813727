//go:build tools

// Package helm pins the Helm CLI that tests/deploy/helm_test.ts and the end-to-end suite run:
// `go build helm.sh/helm/v3/cmd/helm`, from the module proxy, cached by tests/deploy/helm_tool.ts.
package helm

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
