// Package codec binds the schemas contract to CloudEvents: an event of a schemas type is built with NewEvent
// and read back with DecodePayload. It is apart from schemas so that the payload types stay free of any
// transport, for placement/ to use them.
package codec
