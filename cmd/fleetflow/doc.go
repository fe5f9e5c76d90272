// Command fleetflow runs the fleetflow pipeline and its tools: the local fleet (fleet up/down), the producer,
// placer and appliers (alone or together with run), and the offline tools analyze, simulate and bench.
package main
