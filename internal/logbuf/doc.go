// Package logbuf owns Buffer, a log sink that goroutines write to while a test reads what they logged.
package logbuf
