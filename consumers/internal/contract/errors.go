package contract

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/fleetflow/fleetflow/internal/bus"
)

// Classify marks API errors that retrying cannot fix as permanent; conflicts, timeouts and unavailability
// are retried, and so are the refusals that pass: a namespace still terminating (the next attempt creates it
// again) and an exceeded resource quota.
func Classify(err error) error {
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause), isQuotaExceeded(err):
		return err
	case apierrors.IsForbidden(err), apierrors.IsInvalid(err), apierrors.IsBadRequest(err),
		apierrors.IsMethodNotSupported(err), apierrors.IsUnauthorized(err):
		return bus.Permanent(err)
	default:
		return err
	}
}

// isQuotaExceeded reports a refusal by the ResourceQuota admission plugin, which says so only in its message.
func isQuotaExceeded(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota")
}
