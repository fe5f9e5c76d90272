// Package localfleettest starts one real local fleet per test package, from TestMain, and tears it down
// afterwards: on normal exit, on SIGINT/SIGTERM, and (through the parent-death signal of the fleet's
// processes) when the test binary crashes or is killed.
//
//	func TestMain(m *testing.M) { os.Exit(localfleettest.Run(m, localfleettest.WithClusters("east", "west"))) }
//
//	func TestSomething(t *testing.T) {
//		fleet := localfleettest.Fleet(t) // skips the test when the binaries are missing outside CI
//		...
//	}
package localfleettest
