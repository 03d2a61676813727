//go:build tools

// Package keda pins KEDA (github.com/kedacore/keda/v2), a peer the end-to-end tests compare
// with: `go build github.com/kedacore/keda/v2/cmd/operator` and `.../cmd/adapter`, from the
// module proxy, cached by tests/e2e/keda_tool.ts. go.mod repeats KEDA's replace directives,
// which Go ignores in a dependency's go.mod.
package keda

import (
	_ "github.com/kedacore/keda/v2/cmd/adapter"
	_ "github.com/kedacore/keda/v2/cmd/operator"
)
