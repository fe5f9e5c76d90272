package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/fleetflow/fleetflow/internal/natsauth"
)

// TestNATSUsersPrintsSecretsTheServerAndPartsAgreeOn: the seeds Secret holds a user per part and cluster, the
// servers' block names each of their public keys, and --dir keeps the same users on a second run.
func TestNATSUsersPrintsSecretsTheServerAndPartsAgreeOn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "users")
	run := func() (seeds map[string]string, authConf string) {
		t.Helper()
		var out bytes.Buffer
		cmd := newRootCommand()
		cmd.SetOut(&out)
		cmd.SetArgs([]string{"nats", "users", "--clusters", "a,b", "--dir", dir, "-o", "yaml"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		var list struct {
			Items []corev1.Secret `json:"items"`
		}
		if err := sigsyaml.Unmarshal(out.Bytes(), &list); err != nil {
			t.Fatal(err)
		}
		for _, s := range list.Items {
			switch s.Name {
			case natsUsersSecret:
				seeds = s.StringData
			case natsAuthSecret:
				authConf = s.StringData[natsAuthKey]
			}
		}
		return seeds, authConf
	}
	seeds, authConf := run()
	wantUsers := []string{"admin", "placer", "status", "producer", "audit", "ui", "cluster-producer-a", "applier-a",
		"cluster-producer-b", "applier-b"}
	if len(seeds) != len(wantUsers) {
		t.Errorf("%d seeds, want %d: %v", len(seeds), len(wantUsers), wantUsers)
	}
	users, err := natsauth.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range wantUsers {
		seed, ok := seeds[name+".nk"]
		if !ok {
			t.Errorf("no seed of %s", name)
			continue
		}
		var user *natsauth.User
		for _, u := range users.All {
			if u.Name == name {
				user = u
			}
		}
		if user == nil || strings.TrimSpace(seed) != string(user.Seed) {
			t.Errorf("%s: the Secret's seed is not the one kept in --dir", name)
			continue
		}
		if !strings.Contains(authConf, `nkey: "`+user.PublicKey+`"`) {
			t.Errorf("the servers' block does not name %s's key", name)
		}
	}
	again, _ := run()
	if again["applier-a.nk"] != seeds["applier-a.nk"] {
		t.Error("a second run with the same --dir made new users")
	}
}
