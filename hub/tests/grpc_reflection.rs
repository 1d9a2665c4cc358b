//! grpc.health.v1 and both server reflection versions over a real socket:
//! grpcurl/grpcui speak `grpc.reflection.v1`, Python's grpcio-reflection and
//! older grpcurl, Evans and Postman builds only `grpc.reflection.v1alpha`.
//! Each version lists the services and resolves a file by symbol.

mod common;
mod grpc_support;

use common::Hub;
use grpc_support::{Grpc, within};
use prost::Message;
use prost_types::FileDescriptorProto;

#[tokio::test]
async fn health_serving_for_every_service() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

    let hub = Hub::new().await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut health = HealthClient::new(grpc.channel.clone());
    for service in ["", "fleetgate.v1.SpokeService", "fleetgate.v1.AdminService"] {
        let r = health
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.status(), ServingStatus::Serving, "{service}");
    }
    grpc.stop().await;
}

/// What one reflection exchange answered, the same shape for both versions.
#[derive(Debug)]
enum Answer {
    Services(Vec<String>),
    Files(Vec<FileDescriptorProto>),
    Error(i32, String),
}

/// One reflection client per protocol version; the generated types differ
/// only in their package, so one macro writes both.
macro_rules! reflection_client {
    ($name:ident, $version:ident) => {
        /// Sends `requests` on one reflection stream and collects the answers
        /// (an error ends the stream, so it comes last).
        async fn $name(grpc: &Grpc, requests: Vec<Request>) -> Vec<Answer> {
            use tonic_reflection::pb::$version::ServerReflectionRequest;
            use tonic_reflection::pb::$version::server_reflection_client::ServerReflectionClient;
            use tonic_reflection::pb::$version::server_reflection_request::MessageRequest;
            use tonic_reflection::pb::$version::server_reflection_response::MessageResponse;

            let n = requests.len();
            let requests: Vec<ServerReflectionRequest> = requests
                .into_iter()
                .map(|r| ServerReflectionRequest {
                    host: String::new(),
                    message_request: Some(match r {
                        Request::List => MessageRequest::ListServices(String::new()),
                        Request::Symbol(s) => MessageRequest::FileContainingSymbol(s.into()),
                        Request::File(f) => MessageRequest::FileByFilename(f.into()),
                    }),
                })
                .collect();
            let mut client = ServerReflectionClient::new(grpc.channel.clone());
            let mut stream = within(
                "reflection stream",
                client.server_reflection_info(tokio_stream::iter(requests)),
            )
            .await
            .expect(concat!(stringify!($version), " reflection is served"))
            .into_inner();
            let mut answers = Vec::new();
            while answers.len() < n {
                // tonic-reflection ends the stream with a status for an
                // unknown symbol rather than sending an ErrorResponse.
                let msg = match within("reflection answer", stream.message()).await {
                    Ok(msg) => msg.expect("an answer per request"),
                    Err(status) => {
                        answers.push(Answer::Error(status.code() as i32, status.message().into()));
                        break;
                    }
                };
                answers.push(match msg.message_response.expect("a response") {
                    MessageResponse::ListServicesResponse(l) => {
                        Answer::Services(l.service.into_iter().map(|s| s.name).collect())
                    }
                    MessageResponse::FileDescriptorResponse(f) => Answer::Files(
                        f.file_descriptor_proto
                            .iter()
                            .map(|b| FileDescriptorProto::decode(b.as_slice()).unwrap())
                            .collect(),
                    ),
                    MessageResponse::ErrorResponse(e) => {
                        Answer::Error(e.error_code, e.error_message)
                    }
                    other => panic!("unexpected {other:?}"),
                });
            }
            answers
        }
    };
}

reflection_client!(reflect_v1, v1);
reflection_client!(reflect_v1alpha, v1alpha);

#[derive(Debug, Clone, Copy)]
enum Request {
    List,
    Symbol(&'static str),
    File(&'static str),
}

/// The answers any reflection version must give for the hub's API.
fn check(version: &str, answers: Vec<Answer>) {
    let [services, by_symbol, by_message, timestamp, unknown] = answers.try_into().unwrap();
    let Answer::Services(names) = services else {
        panic!("{version}: list answered {services:?}");
    };
    for want in [
        "fleetgate.v1.SpokeService",
        "fleetgate.v1.AdminService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "{version}: {want} in {names:?}"
        );
    }

    // The file declaring AdminService comes first; its imports may follow.
    let Answer::Files(files) = by_symbol else {
        panic!("{version}: symbol answered {by_symbol:?}");
    };
    let admin = &files[0];
    assert_eq!(admin.package(), "fleetgate.v1", "{version}");
    assert!(
        admin.service.iter().any(|s| s.name() == "AdminService"),
        "{version}: {:?} declares AdminService",
        admin.name()
    );
    assert!(
        admin.service[0]
            .method
            .iter()
            .any(|m| m.name() == "WatchFleet"),
        "{version}: WatchFleet in {:?}",
        admin.service[0].method
    );

    let Answer::Files(files) = by_message else {
        panic!("{version}: message symbol answered {by_message:?}");
    };
    assert!(
        files[0].message_type.iter().any(|m| m.name() == "Hello"),
        "{version}: Hello in {:?}",
        files[0].name()
    );

    // Imports resolve by file name, so a client can build the whole tree.
    let Answer::Files(files) = timestamp else {
        panic!("{version}: file answered {timestamp:?}");
    };
    assert_eq!(
        files[0].name(),
        "google/protobuf/timestamp.proto",
        "{version}"
    );

    let Answer::Error(code, message) = unknown else {
        panic!("{version}: unknown symbol answered {unknown:?}");
    };
    assert_eq!(code, tonic::Code::NotFound as i32, "{version}: {message}");
}

const REQUESTS: [Request; 5] = [
    Request::List,
    Request::Symbol("fleetgate.v1.AdminService"),
    Request::Symbol("fleetgate.v1.Hello"),
    Request::File("google/protobuf/timestamp.proto"),
    Request::Symbol("fleetgate.v1.NoSuchService"),
];

#[tokio::test]
async fn reflection_v1_lists_and_resolves() {
    let hub = Hub::new().await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    check("v1", reflect_v1(&grpc, REQUESTS.to_vec()).await);
    grpc.stop().await;
}

#[tokio::test]
async fn reflection_v1alpha_lists_and_resolves() {
    let hub = Hub::new().await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    check("v1alpha", reflect_v1alpha(&grpc, REQUESTS.to_vec()).await);
    grpc.stop().await;
}
