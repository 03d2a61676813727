//go:build tools

// Package controlplane pins the upstream control-plane commands that the end-to-end suite
// builds: `go build k8s.io/kubernetes/cmd/kube-apiserver` and friends, from the module proxy.
package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)
