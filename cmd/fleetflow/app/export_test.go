package app

// Unanswered is unanswered, for the external tests.
var Unanswered = unanswered
