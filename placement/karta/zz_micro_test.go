package karta
import "testing"
func BenchmarkZZConvert(b *testing.B) {
	obj := rayCluster64(b)
	v := obj["spec"].(map[string]any)["workerGroupSpecs"].([]any)[0].(map[string]any)["template"]
	b.ReportAllocs()
	for b.Loop() { convertTemplate(v, specPodTemplate) }
}
func BenchmarkZZEffective(b *testing.B) {
	obj := rayCluster64(b)
	v := obj["spec"].(map[string]any)["workerGroupSpecs"].([]any)[0].(map[string]any)["template"]
	t, _ := convertTemplate(v, specPodTemplate)
	b.ReportAllocs()
	for b.Loop() { EffectivePodRequests(&t.Spec) }
}
func BenchmarkZZHash(b *testing.B) {
	obj := rayCluster64(b)
	v := obj["spec"].(map[string]any)["workerGroupSpecs"].([]any)[0].(map[string]any)["template"]
	b.ReportAllocs()
	for b.Loop() { contentKey(specPodTemplate, v) }
}
