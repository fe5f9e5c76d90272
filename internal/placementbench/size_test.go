package placementbench

import "testing"

func TestFleetSizeValidate(t *testing.T) {
	ok := FleetSize{Clusters: 2, NodesPerCluster: 3, Workloads: 1, GPUNodePercent: 20}
	for _, tc := range []struct {
		name         string
		edit         func(*FleetSize)
		minWorkloads int
		want         string // "" for no error
	}{
		{"valid", func(*FleetSize) {}, 1, ""},
		{"one cluster of one node", func(s *FleetSize) { s.Clusters, s.NodesPerCluster = 1, 1 }, 1, ""},
		{"no GPU nodes", func(s *FleetSize) { s.GPUNodePercent = 0 }, 1, ""},
		{"only GPU nodes", func(s *FleetSize) { s.GPUNodePercent = 100 }, 1, ""},
		{"no workloads where the fleet alone may be built", func(s *FleetSize) { s.Workloads = 0 }, 0, ""},
		{"no clusters", func(s *FleetSize) { s.Clusters = 0 }, 1, "--clusters 0: want at least 1"},
		{"negative clusters", func(s *FleetSize) { s.Clusters = -1 }, 0, "--clusters -1: want at least 1"},
		{"no nodes", func(s *FleetSize) { s.NodesPerCluster = 0 }, 1, "--nodes-per-cluster 0: want at least 1"},
		{"no workloads", func(s *FleetSize) { s.Workloads = 0 }, 1, "--workloads 0: want at least 1"},
		{"negative workloads", func(s *FleetSize) { s.Workloads = -1 }, 0, "--workloads -1: want at least 0"},
		{"negative GPU share", func(s *FleetSize) { s.GPUNodePercent = -1 }, 1, "--gpu-node-percent -1: want 0..100"},
		{"GPU share over 100", func(s *FleetSize) { s.GPUNodePercent = 101 }, 1, "--gpu-node-percent 101: want 0..100"},
		{"the first bad flag is named", func(s *FleetSize) { s.NodesPerCluster, s.GPUNodePercent = 0, 101 }, 1,
			"--nodes-per-cluster 0: want at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			tc.edit(&s)
			err := s.Validate(tc.minWorkloads)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%+v.Validate(%d) = %v, want nil", s, tc.minWorkloads, err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("%+v.Validate(%d) = %v, want %q", s, tc.minWorkloads, err, tc.want)
			}
		})
	}
}
