// Package jsontest draws random JSON-able values for the property tests of fleetflow's JSON encoder
// (internal/jsonenc) and decoder (internal/jsondec), which both check themselves against encoding/json. It is
// for tests only.
package jsontest
