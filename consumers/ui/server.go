package ui

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/fleetflow/fleetflow/consumers/ui/model"
)

// DefaultListen is where the view listens unless told otherwise: this machine only.
const DefaultListen = "127.0.0.1:8090"

// TokenEnv names the environment variable that may hold the bearer token.
const TokenEnv = "FLEETFLOW_UI_TOKEN"

// tokenCookie carries the token a person typed in, so the pages they open next need no header.
const tokenCookie = "fleetflow_ui_token"

// ContentSecurityPolicy lets the pages load only this server's own script, style and images: no inline
// script or style, no other origin, no framing.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed assets
var assetFiles embed.FS

// Server serves the pages. It only reads: the model, and the streams through Streams.
type Server struct {
	model   *model.Model
	streams Streams
	// token, when not empty, is required of every request but the health check.
	token string
	log   *slog.Logger
	pages map[string]*template.Template
}

// Config makes a server.
type Config struct {
	Model *model.Model
	// Streams answers the pages that read the history; nil leaves them saying so.
	Streams Streams
	// Token, when not empty, is the bearer token every request must carry.
	Token string
	Log   *slog.Logger
}

// NewServer parses the pages and returns a server.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{model: cfg.Model, streams: cfg.Streams, token: cfg.Token, log: cfg.Log, pages: map[string]*template.Template{}}
	for _, page := range []string{"fleet", "workloads", "workload", "live", "whatif", "login", "error"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/"+page+".html")
		if err != nil {
			return nil, fmt.Errorf("ui: page %s: %w", page, err)
		}
		s.pages[page] = t
	}
	return s, nil
}

// ReadToken reads the bearer token: from file when given (surrounding space trimmed), else from $FLEETFLOW_UI_TOKEN;
// "" when neither is set.
func ReadToken(file string) (string, error) {
	if file == "" {
		return strings.TrimSpace(os.Getenv(TokenEnv)), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("token file %s is empty", file)
	}
	return token, nil
}

// Handler is every page, behind the security headers, the method check and the token check.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	assets, _ := fs.Sub(assetFiles, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(assets)))
	mux.HandleFunc("GET /{$}", s.fleetPage)
	mux.HandleFunc("GET /heatmap.svg", s.heatMapImage)
	mux.HandleFunc("GET /workloads", s.workloadsPage)
	mux.HandleFunc("GET /workload", s.workloadPage)
	mux.HandleFunc("GET /live", s.livePage)
	mux.HandleFunc("GET /live/events", s.liveEvents)
	mux.HandleFunc("GET /whatif", s.whatIfPage)
	mux.HandleFunc("POST /whatif", s.whatIfRun)
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	return s.secure(mux)
}

// secure sets the security headers on every answer and checks the token.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if s.token != "" && !s.authorized(r) && r.URL.Path != "/healthz" && r.URL.Path != "/login" &&
			!strings.HasPrefix(r.URL.Path, "/assets/") {
			h.Set("WWW-Authenticate", `Bearer realm="fleetflow"`)
			w.WriteHeader(http.StatusUnauthorized)
			s.render(w, r, "login", map[string]any{"Title": "Sign in", "Failed": false})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized reports whether r carries the token, as a bearer token or in the cookie the login form sets.
func (s *Server) authorized(r *http.Request) bool {
	given := ""
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		given = strings.TrimSpace(auth)
	} else if c, err := r.Cookie(tokenCookie); err == nil {
		given = c.Value
	}
	return given != "" && subtle.ConstantTimeCompare([]byte(given), []byte(s.token)) == 1
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, "login", map[string]any{"Title": "Sign in"})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	token := strings.TrimSpace(r.PostFormValue("token"))
	if s.token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.token)) != 1 {
		w.WriteHeader(http.StatusUnauthorized)
		s.render(w, r, "login", map[string]any{"Title": "Sign in", "Failed": true})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// render writes a page; a template that fails midway has written part of it, so the failure is only logged.
func (s *Server) render(w http.ResponseWriter, r *http.Request, page string, data map[string]any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	data["Nav"] = page
	if err := s.pages[page].Execute(w, data); err != nil {
		s.log.Warn("ui: page not rendered", "page", page, "path", r.URL.Path, "error", err)
	}
}

// fail writes an error page with status code.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	w.WriteHeader(code)
	s.render(w, r, "error", map[string]any{"Title": http.StatusText(code), "Error": err.Error()})
}

// Serve listens on addr and serves h until ctx is done; it returns once the listener is open, with the
// address it listens on, and reports how serving ended on done.
func Serve(ctx context.Context, addr string, h http.Handler, log *slog.Logger) (string, <-chan error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("ui: listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	context.AfterFunc(ctx, func() {
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdown); err != nil {
			_ = srv.Close() // live feeds stay open until closed
		}
	})
	log.Info("fleet view serving", "address", "http://"+ln.Addr().String())
	return ln.Addr().String(), done, nil
}
