// Package frameworkcrds holds minimal CRDs of the frameworks fleetflow places: each keeps the framework's
// group, kinds, plural and versions and a status subresource, with a schema that keeps every field.
// `fleetflow bench binding` installs them, and tests use them where ../shared/corpus, which holds the
// frameworks' real CRDs, is absent. Objects reads them by file name, e.g.
// "pytorchjobs.yaml"; tests that take CRD file paths read this directory.
package frameworkcrds
