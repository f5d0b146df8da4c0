//! The HTTP API on Lambda: the same Router as `longrun serve`, with the caller taken from the
//! API Gateway JWT authorizer's `sub` claim. No claim, no user: every route answers 401.

use axum::Router;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use lambda_http::request::RequestContext;
use longrun_http::{Platform, VerifiedUser, router};

pub fn app(platform: Platform) -> Router {
    router(platform).layer(middleware::from_fn(claims_to_user))
}

fn jwt_sub(req: &Request) -> Option<String> {
    match req.extensions().get::<RequestContext>()? {
        RequestContext::ApiGatewayV2(ctx) => ctx
            .authorizer
            .as_ref()?
            .jwt
            .as_ref()?
            .claims
            .get("sub")
            .filter(|s| !s.trim().is_empty())
            .cloned(),
        _ => None,
    }
}

async fn claims_to_user(mut req: Request, next: Next) -> Response {
    let sub = jwt_sub(&req);
    req.extensions_mut().remove::<VerifiedUser>();
    if let Some(sub) = sub {
        req.extensions_mut().insert(VerifiedUser(sub));
    }
    next.run(req).await
}
