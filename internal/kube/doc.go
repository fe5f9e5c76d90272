// Package kube holds the small Kubernetes client plumbing shared by producers and consumers: loading a
// kubeconfig, a REST mapper that refreshes when a new kind appears, and object sanitizing for copying an
// object from one cluster to another.
package kube
