package natsauth

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/fleetflow/fleetflow/internal/bus"
)

// Role is what a part does, which decides its permissions.
type Role string

// The roles. Admin has every right: it provisions the streams and the lease bucket, as fleetflow run and the
// demo do before their parts start, and is the operator's user.
const (
	Admin           Role = "admin"
	Placer          Role = "placer"
	Status          Role = "status"
	Producer        Role = "producer"
	ClusterProducer Role = "cluster-producer"
	Applier         Role = "applier"
	Audit           Role = "audit"
	UI              Role = "ui"
)

// User is one part's NATS identity.
type User struct {
	// Name names the user's seed file and Secret: the role, and for a cluster's parts the cluster after it.
	Name    string
	Role    Role
	Cluster string
	// Seed is the NKey user seed (SU...), the part's secret; PublicKey (U...) is what the server knows.
	Seed      []byte
	PublicKey string
	// Permissions are what the server allows the user; nil for Admin, which may do anything.
	Permissions *server.Permissions
}

// Users are every part's users for a set of workload clusters.
type Users struct {
	All []*User
}

// Generate makes a user with a fresh NKey for every part of a fleet of clusters.
func Generate(clusters []string) (*Users, error) {
	seen := map[string]bool{}
	var users Users
	add := func(role Role, cluster string) error {
		u, err := NewUser(role, cluster, clusters)
		if err != nil {
			return err
		}
		users.All = append(users.All, u)
		return nil
	}
	for _, role := range []Role{Admin, Placer, Status, Producer, Audit, UI} {
		if err := add(role, ""); err != nil {
			return nil, err
		}
	}
	for _, c := range clusters {
		if c == "" || seen[c] {
			return nil, fmt.Errorf("cluster %q: want distinct, non-empty names", c)
		}
		seen[c] = true
		for _, role := range []Role{ClusterProducer, Applier} {
			if err := add(role, c); err != nil {
				return nil, err
			}
		}
	}
	return &users, nil
}

// NewUser makes the user of role (for cluster, when the role is a cluster's) with a fresh NKey, in a fleet of
// clusters.
func NewUser(role Role, cluster string, clusters []string) (*User, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("nkey for %s: %w", role, err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, fmt.Errorf("nkey for %s: %w", role, err)
	}
	return userOf(role, cluster, seed, clusters)
}

// userOf is the user of role and cluster whose NKey seed is seed, in a fleet of clusters.
func userOf(role Role, cluster string, seed []byte, clusters []string) (*User, error) {
	kp, err := nkeys.FromSeed(seed)
	if err != nil {
		return nil, fmt.Errorf("nkey seed of %s: %w", role, err)
	}
	public, err := kp.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("nkey seed of %s: %w", role, err)
	}
	perms, err := Permissions(role, cluster, public, clusters)
	if err != nil {
		return nil, err
	}
	return &User{Name: UserName(role, cluster), Role: role, Cluster: cluster, Seed: seed, PublicKey: public, Permissions: perms}, nil
}

// UserName is the name of the user of role for cluster: the role, then the cluster's name.
func UserName(role Role, cluster string) string {
	if cluster == "" {
		return string(role)
	}
	return string(role) + "-" + cluster
}

// clusterRoles are the roles whose users are a cluster's, longest first: a name is parsed by its prefix.
var clusterRoles = []Role{ClusterProducer, Applier}

// parseUserName reverses UserName.
func parseUserName(name string) (Role, string, error) {
	for _, role := range clusterRoles {
		if cluster, ok := strings.CutPrefix(name, string(role)+"-"); ok && cluster != "" {
			return role, cluster, nil
		}
	}
	switch role := Role(name); role {
	case Admin, Placer, Status, Producer, Audit, UI:
		return role, "", nil
	}
	return "", "", fmt.Errorf("nats user %q: not a role, nor a cluster's role and the cluster's name", name)
}

// LoadDir reads every user whose seed WriteSeeds wrote to dir (as a Secret of them is mounted), whatever its
// clusters; the readers' permissions keep them from the appliers' consumers of those clusters.
func LoadDir(dir string) (*Users, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("nats users: %w", err)
	}
	type named struct {
		role          Role
		cluster, path string
	}
	var found []named
	var clusters []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), seedSuffix)
		if !ok || e.IsDir() {
			continue
		}
		role, cluster, err := parseUserName(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, e.Name()), err)
		}
		found = append(found, named{role, cluster, filepath.Join(dir, e.Name())})
		if cluster != "" && !slices.Contains(clusters, cluster) {
			clusters = append(clusters, cluster)
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("nats users: no seed (*%s) in %s: %w", seedSuffix, dir, os.ErrNotExist)
	}
	var users Users
	for _, f := range found {
		seed, err := os.ReadFile(f.path)
		if err != nil {
			return nil, fmt.Errorf("nats user: %w", err)
		}
		user, err := userOf(f.role, f.cluster, bytes.TrimSpace(seed), clusters)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.path, err)
		}
		users.All = append(users.All, user)
	}
	return &users, nil
}

// Get returns the user of role for cluster ("" for the parts that are not a cluster's), nil when there is none.
func (u *Users) Get(role Role, cluster string) *User {
	if u == nil {
		return nil
	}
	for _, user := range u.All {
		if user.Role == role && user.Cluster == cluster {
			return user
		}
	}
	return nil
}

// ServerUsers are the users as the embedded server takes them (bus.EmbeddedOptions.Users); none for nil.
func (u *Users) ServerUsers() []*server.NkeyUser {
	if u == nil {
		return nil
	}
	out := make([]*server.NkeyUser, 0, len(u.All))
	for _, user := range u.All {
		out = append(out, &server.NkeyUser{Nkey: user.PublicKey, Permissions: user.Permissions})
	}
	return out
}

// seedSuffix ends every seed file's name.
const seedSuffix = ".nk"

// SeedFile is where WriteSeeds puts the seed of the user named name in dir.
func SeedFile(dir, name string) string { return filepath.Join(dir, name+seedSuffix) }

// WriteSeeds writes each user's seed to SeedFile(dir, its name), readable by its owner only.
func (u *Users) WriteSeeds(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("nats users: %w", err)
	}
	for _, user := range u.All {
		if err := os.WriteFile(SeedFile(dir, user.Name), append(slices.Clone(user.Seed), '\n'), 0o600); err != nil {
			return fmt.Errorf("nats user %s: %w", user.Name, err)
		}
	}
	return nil
}

// LoadOrGenerate reads the users of clusters whose seeds dir holds, and makes the others, writing their seeds
// there: a fleet keeps its users across restarts, and a cluster added later gets its own.
func LoadOrGenerate(dir string, clusters []string) (*Users, error) {
	want, err := Generate(clusters) // fresh keys, kept for the users dir has none of
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("nats users: %w", err)
	}
	var users Users
	for _, w := range want.All {
		path := SeedFile(dir, w.Name)
		seed, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if err := os.WriteFile(path, append(slices.Clone(w.Seed), '\n'), 0o600); err != nil {
				return nil, fmt.Errorf("nats user %s: %w", w.Name, err)
			}
			users.All = append(users.All, w)
			continue
		case err != nil:
			return nil, fmt.Errorf("nats user %s: %w", w.Name, err)
		}
		user, err := userOf(w.Role, w.Cluster, bytes.TrimSpace(seed), clusters)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		users.All = append(users.All, user)
	}
	return &users, nil
}

// InboxPrefix is where user's replies go (bus.InboxPrefix).
func (u *User) InboxPrefix() string { return bus.InboxPrefix(u.PublicKey) }
