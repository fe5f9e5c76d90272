package e2e

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/logbuf"
	"github.com/fleetflow/fleetflow/internal/satoken"
)

// TestClusterTokenIsRenewedBeforeItExpires: a Cluster whose kubeconfig carries an expiring service-account
// token (what `kubectl create token` gives, and the workload-cluster chart's role lets renew) gets a new one once
// two thirds of its life are gone: stored in its Secret, working, and the one its runner works with.
func TestClusterTokenIsRenewedBeforeItExpires(t *testing.T) {
	c := newClusterManagerTest(t)
	ctx := t.Context()
	const namespace, account = "fleetflow-agent-renewal", "fleetflow"
	core := c.controlPlane.Core
	// The identity the workload-cluster chart makes: a service account that may create tokens for itself.
	for _, create := range []func() error{
		func() error {
			_, err := core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := core.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := core.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "token-renewal"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"},
					ResourceNames: []string{account}, Verbs: []string{"create"}}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := core.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "token-renewal"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "token-renewal"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: namespace}}}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := create(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = core.CoreV1().Namespaces().Delete(context.Background(), namespace, metav1.DeleteOptions{}) })

	tenMinutes := int64(600) // the shortest token the apiserver issues
	granted, err := core.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, account,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &tenMinutes}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first, ok := satoken.Parse(granted.Status.Token)
	if !ok {
		t.Fatalf("the apiserver's token %q does not parse as an expiring service-account token", granted.Status.Token)
	}
	name := "renewal"
	c.register(name, tokenKubeconfig(t, c.kubeconfig, first.Raw))

	// Seven minutes on, the first token is due (two thirds of ten); once a runner has another, time is real again.
	var renewed atomic.Bool
	var mu sync.Mutex
	var runnerTokens []string
	logs := &logbuf.Buffer{}
	defer func() {
		if t.Failed() {
			t.Logf("cluster manager log:\n%s", logs.String())
		}
	}()
	c.start(&app.ClusterManager{
		Log: slog.New(slog.NewTextHandler(logs, nil)),
		Now: func() time.Time {
			if renewed.Load() {
				return time.Now()
			}
			return time.Now().Add(7 * time.Minute)
		},
		Run: func(ctx context.Context, cluster string, clients *kube.Clients, _ <-chan struct{}) error {
			if cluster == name {
				mu.Lock()
				runnerTokens = append(runnerTokens, clients.Config.BearerToken)
				mu.Unlock()
				renewed.Store(renewed.Load() || clients.Config.BearerToken != first.Raw)
			}
			<-ctx.Done()
			return nil
		}})

	var stored *satoken.Token
	e2eenv.Eventually(t, time.Minute, "a renewed token in the Cluster's Secret, the runner's", func() bool {
		secret, err := core.CoreV1().Secrets(app.SystemNamespace).Get(ctx, "cluster-"+name+"-kubeconfig", metav1.GetOptions{})
		if err != nil {
			return false
		}
		raw, err := satoken.InKubeconfig(secret.Data[app.DefaultKubeconfigKey])
		if err != nil || raw == first.Raw {
			return false
		}
		stored, _ = satoken.Parse(raw)
		mu.Lock()
		defer mu.Unlock()
		return stored != nil && len(runnerTokens) > 0 && runnerTokens[len(runnerTokens)-1] == stored.Raw
	})
	if stored.Namespace != namespace || stored.Name != account || stored.Lifetime() != first.Lifetime() {
		t.Errorf("renewed token of %s/%s for %s, want %s/%s for %s", stored.Namespace, stored.Name, stored.Lifetime(),
			namespace, account, first.Lifetime())
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(tokenKubeconfig(t, c.kubeconfig, stored.Raw))
	if err != nil {
		t.Fatal(err)
	}
	as, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := as.Core.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || review.Status.UserInfo.Username != "system:serviceaccount:"+namespace+":"+account {
		t.Errorf("the renewed token authenticates as %v (%v), want the service account", review, err)
	}
}

// tokenKubeconfig is kubeconfig (its server and CA) with token as its only credential.
func tokenKubeconfig(t *testing.T, kubeconfig []byte, token string) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range cfg.AuthInfos {
		user.ClientCertificate, user.ClientCertificateData, user.ClientKey, user.ClientKeyData = "", nil, "", nil
		user.Token = token
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
