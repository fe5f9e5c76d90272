package replay

// SetPeekLimit sets how many records a replay reads ahead, and returns a function that puts it back.
func SetPeekLimit(n int) (restore func()) {
	old := peekLimit
	peekLimit = n
	return func() { peekLimit = old }
}
