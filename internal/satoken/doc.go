// Package satoken renews the Kubernetes service-account token a kubeconfig carries before it expires: it reads
// the token's claims (whose service account, issued and expiring when), says when it is due, asks the cluster
// for a new one through the TokenRequest API, and writes it into the kubeconfig.
package satoken
