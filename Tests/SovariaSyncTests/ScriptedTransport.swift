import Foundation
import SovariaQueue
import SovariaSync
import SovariaTestServers
import Synchronization

/// An in-process server for the controller's tests: answers each request with a scripted
/// response, applies each `Idempotency-Key` once, and can be taken off the network.
final class ScriptedTransport: SyncTransport {
    struct State {
        var online = true
        /// Answers given in order, before the default one.
        var script: [DataResponse] = []
        var defaultAnswer = DataResponse(status: 201, body: "[]")
        /// Every request that reached the server, in order.
        var received: [DataRequest] = []
        /// The idempotency keys whose writes the server applied, in order, each once.
        var applied: [String] = []
        /// The next answer is lost after the server applied the write: the client sees no network.
        var loseNextAnswer = false
        /// Thrown by every send, before the request reaches the server, while set.
        var failure: SyncTransportError?
    }

    let state = Mutex(State())

    func send(_ request: DataRequest) async throws -> DataResponse {
        try state.withLock { state in
            guard state.online else { throw SyncTransportError.offline("scripted: no network") }
            if let failure = state.failure { throw failure }
            state.received.append(request)
            let answer = state.script.isEmpty ? state.defaultAnswer : state.script.removeFirst()
            if answer.isSuccess, request.method != "GET", let key = request.headers["Idempotency-Key"],
                !state.applied.contains(key)
            {
                state.applied.append(key)
            }
            if state.loseNextAnswer {
                state.loseNextAnswer = false
                throw SyncTransportError.offline("scripted: the connection dropped before the answer")
            }
            return answer
        }
    }

    var online: Bool {
        get { state.withLock { $0.online } }
        set { state.withLock { $0.online = newValue } }
    }

    func loseNextAnswer() { state.withLock { $0.loseNextAnswer = true } }
    func fail(with failure: SyncTransportError?) { state.withLock { $0.failure = failure } }
    func answer(_ responses: DataResponse...) { state.withLock { $0.script += responses } }
    var received: [DataRequest] { state.withLock { $0.received } }
    var applied: [String] { state.withLock { $0.applied } }
}
