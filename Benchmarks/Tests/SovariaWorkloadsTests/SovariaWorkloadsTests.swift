import Testing

@testable import SovariaWorkloads
