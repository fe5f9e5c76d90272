// Package evalguard owns the record a process keeps of the user ResourceInterface evaluations it has in
// progress (karta.EvaluationGuard): a small file whose slots hold the identity of each RI version being
// evaluated. A process that dies during one (Go cannot survive running out of memory) leaves its identity
// behind, and the next process refuses that version instead of dying again.
package evalguard
