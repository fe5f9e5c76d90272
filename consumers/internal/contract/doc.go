// Package contract holds what the appliers and the status writer must read and write the same way: the
// place of a decision or verdict in its stream and which API errors are permanent. It is a leaf below those
// components, so neither imports the other. What is read the same way of objects is placement/objects'.
package contract
