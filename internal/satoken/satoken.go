package satoken

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Token is a service-account token with what its claims say of it.
type Token struct {
	Raw               string
	Namespace, Name   string
	IssuedAt, Expires time.Time
}

// Parse reads raw's claims without checking its signature (the cluster does that when the token is used). ok
// is false for what is no expiring service-account token: a token of another kind, or a legacy one of a
// Secret, which never expires and so is never renewed.
func Parse(raw string) (t *Token, ok bool) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return nil, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, false
	}
	var claims struct {
		Subject  string `json:"sub"`
		IssuedAt int64  `json:"iat"`
		Expires  int64  `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Expires == 0 || claims.IssuedAt == 0 || claims.Expires <= claims.IssuedAt {
		return nil, false
	}
	rest, isServiceAccount := strings.CutPrefix(claims.Subject, "system:serviceaccount:")
	namespace, name, found := strings.Cut(rest, ":")
	if !isServiceAccount || !found || namespace == "" || name == "" {
		return nil, false
	}
	return &Token{Raw: raw, Namespace: namespace, Name: name, IssuedAt: time.Unix(claims.IssuedAt, 0),
		Expires: time.Unix(claims.Expires, 0)}, true
}

// Lifetime is how long the token was issued for.
func (t *Token) Lifetime() time.Duration { return t.Expires.Sub(t.IssuedAt) }

// Due reports whether the token should be renewed at now: once two thirds of its life are gone, which leaves
// a third for retries when the cluster cannot be reached (the kubelet renews its own at 80%).
func (t *Token) Due(now time.Time) bool { return !now.Before(t.IssuedAt.Add(t.Lifetime() * 2 / 3)) }

// Renew asks the cluster for a new token of t's service account, valid as long as t was: a service account
// that may create tokens for itself (serviceaccounts/token) renews its own.
func Renew(ctx context.Context, cluster kubernetes.Interface, t *Token) (*Token, error) {
	seconds := int64(t.Lifetime().Seconds())
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}
	granted, err := cluster.CoreV1().ServiceAccounts(t.Namespace).CreateToken(ctx, t.Name, request, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("renew the token of service account %s/%s: %w", t.Namespace, t.Name, err)
	}
	renewed, ok := Parse(granted.Status.Token)
	if !ok {
		return nil, fmt.Errorf("renew the token of service account %s/%s: the cluster answered with no expiring service-account token",
			t.Namespace, t.Name)
	}
	return renewed, nil
}

// InKubeconfig returns the token of the current context's user, "" when it has none.
func InKubeconfig(kubeconfig []byte) (string, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return "", err
	}
	if user := currentUser(cfg); user != nil {
		return user.Token, nil
	}
	return "", nil
}

// WithToken returns kubeconfig with token as the current context's user's.
func WithToken(kubeconfig []byte, token string) ([]byte, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, err
	}
	user := currentUser(cfg)
	if user == nil {
		return nil, errors.New("the current context has no user to give the token to")
	}
	user.Token = token
	return clientcmd.Write(*cfg)
}

// currentUser is the current context's user, nil when there is none.
func currentUser(cfg *clientcmdapi.Config) *clientcmdapi.AuthInfo {
	if ctx := cfg.Contexts[cfg.CurrentContext]; ctx != nil {
		return cfg.AuthInfos[ctx.AuthInfo]
	}
	return nil
}
