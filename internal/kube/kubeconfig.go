package kube

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigRef names a client configuration as kubectl takes one: a kubeconfig file (Path; "" for $KUBECONFIG,
// its files merged, else ~/.kube/config) and one of its contexts (Context; "" for its current one).
type KubeconfigRef struct {
	Path, Context string
}

// String is the reference as flags write it: PATH@CONTEXT.
func (r KubeconfigRef) String() string {
	path := r.Path
	if path == "" {
		path = "(default kubeconfig)"
	}
	if r.Context == "" {
		return path
	}
	return path + "@" + r.Context
}

// clientConfig loads r with client-go's deferred loading rules, as kubectl does.
func (r KubeconfigRef) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = r.Path
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: r.Context})
}

// LoadConfig builds the client configuration r names. With no kubeconfig anywhere (no Path, $KUBECONFIG or
// ~/.kube/config), it is the service account of the pod this process runs in, as for kubectl.
func LoadConfig(r KubeconfigRef) (*rest.Config, error) {
	cfg, err := r.clientConfig().ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, fmt.Errorf("no kubeconfig: give --kubeconfig, set $KUBECONFIG, write ~/.kube/config, or run in a pod "+
			"with a service account: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", r, err)
	}
	tuneRate(cfg)
	return cfg, nil
}

// ClientsFor loads the configuration r names and builds its clients.
func ClientsFor(r KubeconfigRef) (*Clients, error) {
	cfg, err := LoadConfig(r)
	if err != nil {
		return nil, err
	}
	return NewClients(cfg)
}

// StandaloneKubeconfig is the kubeconfig r names as one self-contained document: its context only (made the
// current one), with that context's cluster and user, and the files they name (certificates, keys) embedded, so
// it works wherever it is copied to, as a Secret does.
func StandaloneKubeconfig(r KubeconfigRef) ([]byte, error) {
	raw, err := r.clientConfig().RawConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", r, err)
	}
	if r.Context != "" {
		if _, ok := raw.Contexts[r.Context]; !ok {
			return nil, fmt.Errorf("kubeconfig %s: no context %q", r, r.Context)
		}
		raw.CurrentContext = r.Context
	}
	if err := clientcmdapi.MinifyConfig(&raw); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", r, err)
	}
	if err := clientcmdapi.FlattenConfig(&raw); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: embed the files it names: %w", r, err)
	}
	for name, user := range raw.AuthInfos { // FlattenConfig embeds certificates and keys, not token files
		if user.TokenFile == "" || user.Token != "" {
			continue
		}
		token, err := os.ReadFile(user.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: user %s: token file: %w", r, name, err)
		}
		user.Token, user.TokenFile = strings.TrimSpace(string(token)), ""
	}
	data, err := clientcmd.Write(raw)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", r, err)
	}
	return data, nil
}

// ParseKubeconfigRef reads KUBECONFIG[@CONTEXT]. Context names hold "@" and "/" (kubernetes-admin@kubernetes,
// arn:aws:eks:...:cluster/prod), so the path is the shortest prefix before an "@" that names a file, or the
// whole value when no such prefix does.
func ParseKubeconfigRef(value string) (KubeconfigRef, error) {
	if value == "" {
		return KubeconfigRef{}, errors.New("empty kubeconfig")
	}
	if isFile(value) {
		return KubeconfigRef{Path: value}, nil
	}
	for i := strings.IndexByte(value, '@'); i >= 0; {
		if path := value[:i]; path != "" && isFile(path) {
			if value[i+1:] == "" {
				return KubeconfigRef{}, fmt.Errorf("kubeconfig %q: empty context after @", value)
			}
			return KubeconfigRef{Path: path, Context: value[i+1:]}, nil
		}
		next := strings.IndexByte(value[i+1:], '@')
		if next < 0 {
			break
		}
		i += next + 1
	}
	return KubeconfigRef{}, fmt.Errorf("kubeconfig %q: no such file (a context goes after the path, as PATH@CONTEXT)", value)
}

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir()
}
