import SovariaHTTP

extension URLSessionTransport.Configuration {
    /// For a test server on this machine: the defaults with a timeout of five minutes, so that a
    /// machine loaded by the whole suite at once (two cores, every suite in parallel) never turns
    /// a slow answer into `timedOut`. A test of the timeout itself sets its own.
    public static var testServer: Self {
        var configuration = Self()
        configuration.timeout = .seconds(300)
        return configuration
    }
}
