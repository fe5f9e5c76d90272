// Package browser drives the fleet view (`fleetflow ui`) in headless Chromium (Debian's chromium package)
// through every page, on the e2e fleet with the real pipeline: what a person would see, asserted in the
// page, with screenshots saved as test artifacts (go test -artifacts). It skips with a message when chromium
// or the apiserver binaries are missing, except under CI=true.
package browser
