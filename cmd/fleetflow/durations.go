package main

import (
	"fmt"
	"time"
)

func parseDuration(flag, value string) (time.Duration, error) {
	d, err := time.ParseDuration(value)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", flag, value, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s %q: must be positive", flag, value)
	}
	return d, nil
}
