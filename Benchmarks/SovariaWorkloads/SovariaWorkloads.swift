import Sovaria

/// Workload generators, trace readers and the replay driver that `sovaria-bench` and the tests
/// share (issue 36).
package enum SovariaWorkloads {}
