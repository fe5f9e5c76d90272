package contract

import (
	"strconv"
	"strings"
)

// StreamPlace is where a decision or a verdict stands among the placer's answers about one workload: its
// per-workload sequence, within the epoch (the lifetime of the streams) that sequence counts in.
type StreamPlace struct {
	Epoch string
	Seq   uint64
}

// Mark is the place as an annotation records it: "<epoch>/<sequence>", or the sequence alone without an epoch.
func (p StreamPlace) Mark() string {
	seq := strconv.FormatUint(p.Seq, 10)
	if p.Epoch == "" {
		return seq
	}
	return p.Epoch + "/" + seq
}

// Before reports whether p comes strictly before the place recorded in mark. Places of two epochs are not
// comparable (streams recreated from scratch count from 1 again), so p is then not before; nor is it when
// nothing, or nothing readable, is recorded.
func (p StreamPlace) Before(mark string) bool {
	epoch, seqText := "", mark
	if i := strings.LastIndex(mark, "/"); i >= 0 {
		epoch, seqText = mark[:i], mark[i+1:]
	}
	if epoch != p.Epoch {
		return false
	}
	seq, err := strconv.ParseUint(seqText, 10, 64)
	return err == nil && seq > p.Seq
}
