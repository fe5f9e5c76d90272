package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigFile writes a kubeconfig with one context per server given ("ctx-N" → server), the first current, whose
// user's token is in a file beside it, and returns its path.
func kubeconfigFile(t *testing.T, dir, name string, servers ...string) string {
	t.Helper()
	tokenFile := filepath.Join(dir, name+".token")
	if err := os.WriteFile(tokenFile, []byte("secret-"+name), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{TokenFile: tokenFile}
	for i, server := range servers {
		ctx := name + "-ctx-" + string(rune('a'+i))
		cfg.Clusters[ctx] = &clientcmdapi.Cluster{Server: server}
		cfg.Contexts[ctx] = &clientcmdapi.Context{Cluster: ctx, AuthInfo: name}
		if i == 0 {
			cfg.CurrentContext = ctx
		}
	}
	path := filepath.Join(dir, name)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadConfigFindsTheClusterAsKubectlDoes(t *testing.T) {
	dir := t.TempDir()
	first := kubeconfigFile(t, dir, "first", "https://first-a:6443", "https://first-b:6443")
	second := kubeconfigFile(t, dir, "second", "https://second-a:6443")
	tests := []struct {
		name       string
		ref        KubeconfigRef
		kubeconfig string // $KUBECONFIG
		want       string // the server, or an error's text
	}{
		{"the file given, its current context", KubeconfigRef{Path: first}, "", "https://first-a:6443"},
		{"the file given, another context", KubeconfigRef{Path: first, Context: "first-ctx-b"}, "", "https://first-b:6443"},
		{"the file given wins over $KUBECONFIG", KubeconfigRef{Path: second}, first, "https://second-a:6443"},
		{"$KUBECONFIG, files merged, the first's current context", KubeconfigRef{},
			first + string(os.PathListSeparator) + second, "https://first-a:6443"},
		{"$KUBECONFIG, a context of its second file", KubeconfigRef{Context: "second-ctx-a"},
			first + string(os.PathListSeparator) + second, "https://second-a:6443"},
		{"a context no file has", KubeconfigRef{Path: first, Context: "none"}, "", `context "none" does not exist`},
		{"nothing anywhere", KubeconfigRef{}, "", "no kubeconfig: give --kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tt.kubeconfig)
			t.Setenv("HOME", t.TempDir())
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			cfg, err := LoadConfig(tt.ref)
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = cfg.Host
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStandaloneKubeconfigKeepsOneContextWithItsFiles(t *testing.T) {
	dir := t.TempDir()
	path := kubeconfigFile(t, dir, "admin", "https://a:6443", "https://b:6443")
	data, err := StandaloneKubeconfig(KubeconfigRef{Path: path, Context: "admin-ctx-b"})
	if err != nil {
		t.Fatal(err)
	}
	// The token file is gone with the directory: what was written must not need it.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Contexts) != 1 || cfg.CurrentContext != "admin-ctx-b" {
		t.Errorf("contexts %v, current %q: want only admin-ctx-b, current", keys(cfg.Contexts), cfg.CurrentContext)
	}
	rest, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if rest.Host != "https://b:6443" || rest.BearerToken != "secret-admin" {
		t.Errorf("server %q, token %q: want https://b:6443 and the token file's content", rest.Host, rest.BearerToken)
	}
	if _, err := StandaloneKubeconfig(KubeconfigRef{Path: path, Context: "none"}); err == nil {
		t.Error("a context the kubeconfig lacks was taken")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestParseKubeconfigRef(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "config")
	withAt := filepath.Join(dir, "team@prod.yaml")
	for _, f := range []string{plain, withAt} {
		if err := os.WriteFile(f, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		value   string
		want    KubeconfigRef
		wantErr string
	}{
		{value: plain, want: KubeconfigRef{Path: plain}},
		{value: plain + "@admin", want: KubeconfigRef{Path: plain, Context: "admin"}},
		{value: plain + "@kubernetes-admin@kubernetes", want: KubeconfigRef{Path: plain, Context: "kubernetes-admin@kubernetes"}},
		{value: plain + "@arn:aws:eks:eu-west-1:1:cluster/prod", want: KubeconfigRef{Path: plain, Context: "arn:aws:eks:eu-west-1:1:cluster/prod"}},
		{value: withAt, want: KubeconfigRef{Path: withAt}},
		{value: withAt + "@dev", want: KubeconfigRef{Path: withAt, Context: "dev"}},
		{value: plain + "@", wantErr: "empty context"},
		{value: filepath.Join(dir, "none") + "@admin", wantErr: "no such file"},
		{value: dir, wantErr: "no such file"},
		{value: "", wantErr: "empty kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			got, err := ParseKubeconfigRef(tt.value)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
