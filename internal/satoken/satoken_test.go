package satoken

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// jwt is an unsigned token with claims, as Parse reads it (it checks no signature).
func jwt(t *testing.T, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return "e30." + base64.RawURLEncoding.EncodeToString(payload) + ".sig"
}

// TestParseReadsOnlyExpiringServiceAccountTokens: a bound service-account token is read with its account and
// lifetime; a legacy Secret token (no exp), another subject, or what is no JWT are not renewable.
func TestParseReadsOnlyExpiringServiceAccountTokens(t *testing.T) {
	issued := time.Unix(1_800_000_000, 0)
	tests := []struct {
		name string
		raw  string
		ok   bool
	}{
		{"bound", jwt(t, map[string]any{"sub": "system:serviceaccount:agent:fleetflow", "iat": issued.Unix(), "exp": issued.Add(time.Hour).Unix()}), true},
		{"legacy, never expires", jwt(t, map[string]any{"sub": "system:serviceaccount:agent:fleetflow"}), false},
		{"a user's", jwt(t, map[string]any{"sub": "alice", "iat": issued.Unix(), "exp": issued.Add(time.Hour).Unix()}), false},
		{"expiring before issued", jwt(t, map[string]any{"sub": "system:serviceaccount:agent:fleetflow", "iat": issued.Unix(), "exp": issued.Unix()}), false},
		{"no JWT", "abcdef", false},
		{"payload no JSON", "e30.!!!.sig", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token, ok := Parse(tt.raw)
			if ok != tt.ok {
				t.Fatalf("Parse ok = %t, want %t", ok, tt.ok)
			}
			if ok && (token.Namespace != "agent" || token.Name != "fleetflow" || token.Lifetime() != time.Hour) {
				t.Errorf("token %+v, want agent/fleetflow for an hour", token)
			}
		})
	}
}

// TestDueAtTwoThirdsOfItsLife: a token is renewed once two thirds of its life are gone, not before.
func TestDueAtTwoThirdsOfItsLife(t *testing.T) {
	issued := time.Unix(1_800_000_000, 0)
	token := &Token{IssuedAt: issued, Expires: issued.Add(90 * time.Minute)}
	for _, tt := range []struct {
		after time.Duration
		due   bool
	}{{0, false}, {59 * time.Minute, false}, {60 * time.Minute, true}, {2 * time.Hour, true}} {
		if got := token.Due(issued.Add(tt.after)); got != tt.due {
			t.Errorf("Due %s after issue = %t, want %t", tt.after, got, tt.due)
		}
	}
}

// TestWithTokenReplacesTheCurrentUsersToken: the current context's user gets the token, and InKubeconfig reads
// it back; a kubeconfig whose current context has no user is refused.
func TestWithTokenReplacesTheCurrentUsersToken(t *testing.T) {
	kubeconfig := []byte(`apiVersion: v1
kind: Config
clusters: [{name: east, cluster: {server: "https://east:6443"}}]
users: [{name: agent, user: {token: old}}, {name: other, user: {token: theirs}}]
contexts: [{name: east, context: {cluster: east, user: agent}}]
current-context: east
`)
	updated, err := WithToken(kubeconfig, "new")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := InKubeconfig(updated); err != nil || got != "new" {
		t.Errorf("token %q (%v), want new", got, err)
	}
	if !strings.Contains(string(updated), "theirs") {
		t.Errorf("the other user's token was lost:\n%s", updated)
	}
	if _, err := WithToken([]byte("clusters: []\n"), "new"); err == nil {
		t.Error("a kubeconfig with no current context took a token")
	}
}
