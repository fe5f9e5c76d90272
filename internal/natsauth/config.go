package natsauth

import (
	"fmt"
	"strconv"
	"strings"
)

// ServerConfig is the authorization block of a nats-server configuration that serves the users: include it
// in (or paste it into) the configuration of every server of an external NATS cluster. It names each user's
// public key only; the seeds stay with the parts.
func (u *Users) ServerConfig() string {
	var b strings.Builder
	b.WriteString("# fleetflow's NATS users, one per part (fleetflow nats users); each may use only its subjects.\n")
	b.WriteString("authorization {\n  users = [\n")
	for _, user := range u.All {
		fmt.Fprintf(&b, "    # %s\n    {\n      nkey: %s\n", user.Name, strconv.Quote(user.PublicKey))
		if p := user.Permissions; p != nil {
			b.WriteString("      permissions: {\n")
			writeList(&b, "publish", p.Publish.Allow, p.Publish.Deny)
			writeList(&b, "subscribe", p.Subscribe.Allow, p.Subscribe.Deny)
			b.WriteString("      }\n")
		}
		b.WriteString("    }\n")
	}
	b.WriteString("  ]\n}\n")
	return b.String()
}

func writeList(b *strings.Builder, name string, allow, deny []string) {
	fmt.Fprintf(b, "        %s: {\n", name)
	for _, l := range []struct {
		key      string
		subjects []string
	}{{"allow", allow}, {"deny", deny}} {
		if len(l.subjects) == 0 {
			continue
		}
		quoted := make([]string, len(l.subjects))
		for i, s := range l.subjects {
			quoted[i] = strconv.Quote(s)
		}
		fmt.Fprintf(b, "          %s: [%s]\n", l.key, strings.Join(quoted, ", "))
	}
	b.WriteString("        }\n")
}
