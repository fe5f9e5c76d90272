package localfleettest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Starting returns a copy of cfg whose clients see, while the returned flag is set, an apiserver that is starting
// up: /readyz fails, and discovery leaves out group, whose CRDs such an apiserver has not read yet. Its objects
// are still stored, and the real apiserver behind serves every other request.
func Starting(cfg *rest.Config, group string) (*rest.Config, *atomic.Bool) {
	starting := &atomic.Bool{}
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if !starting.Load() {
				return next.RoundTrip(req)
			}
			switch {
			case req.URL.Path == "/readyz":
				return answer(req, http.StatusServiceUnavailable, "[-]poststarthook/crd-informer-synced failed"), nil
			case strings.HasPrefix(req.URL.Path, "/apis/"+group+"/") || req.URL.Path == "/apis/"+group:
				return answer(req, http.StatusNotFound, ""), nil
			case req.URL.Path == "/apis":
				return groupsWithout(next, req, group)
			}
			return next.RoundTrip(req)
		})
	}
	return cfg, starting
}

// groupsWithout answers discovery's group list without group, in its plain (not aggregated) form.
func groupsWithout(next http.RoundTripper, req *http.Request, group string) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Accept", "application/json")
	resp, err := next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var groups metav1.APIGroupList
	if err := json.NewDecoder(resp.Body).Decode(&groups); err != nil {
		return nil, err
	}
	groups.Groups = slices.DeleteFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == group })
	data, err := json.Marshal(groups)
	if err != nil {
		return nil, err
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(data)), int64(len(data))
	resp.Header.Set("Content-Type", "application/json")
	return resp, nil
}

func answer(req *http.Request, code int, body string) *http.Response {
	return &http.Response{StatusCode: code, Body: io.NopCloser(strings.NewReader(body)), Header: http.Header{},
		Request: req, ContentLength: int64(len(body))}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
