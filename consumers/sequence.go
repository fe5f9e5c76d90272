package consumers

import (
	"strconv"
	"strings"
)

// streamPlace is where a decision or a verdict stands among the placer's answers about one workload: its
// per-workload sequence, within the epoch (the lifetime of the streams) that sequence counts in.
type streamPlace struct {
	epoch string
	seq   uint64
}

// mark is the place as an annotation records it: "<epoch>/<sequence>", or the sequence alone without an epoch.
func (p streamPlace) mark() string {
	seq := strconv.FormatUint(p.seq, 10)
	if p.epoch == "" {
		return seq
	}
	return p.epoch + "/" + seq
}

// before reports whether p comes strictly before the place recorded in mark. Places of two epochs are not
// comparable (streams recreated from scratch count from 1 again), so p is then not before; nor is it when
// nothing, or nothing readable, is recorded.
func (p streamPlace) before(mark string) bool {
	epoch, seqText := "", mark
	if i := strings.LastIndex(mark, "/"); i >= 0 {
		epoch, seqText = mark[:i], mark[i+1:]
	}
	if epoch != p.epoch {
		return false
	}
	seq, err := strconv.ParseUint(seqText, 10, 64)
	return err == nil && seq > p.seq
}
