// Package kube holds the small Kubernetes client plumbing shared by producers and consumers: loading a
// kubeconfig and a REST mapper that refreshes when a new kind appears. What is copied of an object is
// placement/objects'.
package kube
