//! An example Worker: a users-and-orders repository on D1 whose methods are retried with
//! `#[d1_retry]` (module `shop`), and the same kind of calls through `D1Retry` (module
//! `wrapped`, routes under `/wrapped`). Routes under `/bounded` reach the methods with time
//! limits (attempt timeout 1 s, deadline 4 s), for a D1 that stalls.
//!
//! Every error reaches the caller as `500 {"error": <text>, "class": <failure class>}`.

mod console;
mod policy;
mod shop;
mod wrapped;

use serde::Deserialize;
use serde::Serialize;
use serde_json::json;
use worker::{Context, Env, Request, Response, Result, RouteContext, Router, event};

use crate::shop::{NewOrder, Shop, User};

#[event(start)]
fn start() {
    console::install();
}

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    Router::new()
        .get_async("/users/count", |_, ctx| async move {
            reply(shop(&ctx)?.count_users().await)
        })
        .get_async("/users/:id", |_, ctx| async move {
            reply(shop(&ctx)?.find_user(id(&ctx, "id")?).await)
        })
        .post_async("/users", |mut req, ctx| async move {
            let new: NewUser = req.json().await?;
            reply(shop(&ctx)?.create_user(&new.email, &new.name).await)
        })
        .put_async("/users/:id", |mut req, ctx| async move {
            let new: NewUser = req.json().await?;
            let user = User {
                id: id(&ctx, "id")?,
                email: new.email,
                name: new.name,
            };
            reply(shop(&ctx)?.save_user(&user).await)
        })
        .get_async("/users/:id/orders", |req, ctx| async move {
            // `?item=lamp`: only that item's orders.
            let item = req
                .url()?
                .query_pairs()
                .find(|(key, _)| key == "item")
                .map(|(_, value)| value.into_owned());
            reply(
                shop(&ctx)?
                    .user_orders(id(&ctx, "id")?, item.as_deref())
                    .await,
            )
        })
        .post_async("/users/:id/orders", |mut req, ctx| async move {
            let order: NewOrder = req.json().await?;
            reply(shop(&ctx)?.place_order(id(&ctx, "id")?, &order).await)
        })
        .get_async("/users/:id/orders/count", |_, ctx| async move {
            reply(shop(&ctx)?.order_count(id(&ctx, "id")?).await)
        })
        .get_async("/users/:id/orders/report", |_, ctx| async move {
            reply(shop(&ctx)?.order_report(id(&ctx, "id")?).await)
        })
        .get_async("/users/:id/orders/summary", |_, ctx| async move {
            reply(shop(&ctx)?.order_summary(id(&ctx, "id")?).await)
        })
        .post_async("/users/:id/orders/prepared", |mut req, ctx| async move {
            let order: NewOrder = req.json().await?;
            reply(
                shop(&ctx)?
                    .place_prepared_order(id(&ctx, "id")?, &order)
                    .await,
            )
        })
        .post_async("/users/:id/orders/batch", |mut req, ctx| async move {
            let orders: Vec<NewOrder> = req.json().await?;
            reply(shop(&ctx)?.place_orders(id(&ctx, "id")?, &orders).await)
        })
        .post_async("/users/:id/orders/each", |mut req, ctx| async move {
            let items: Vec<String> = req.json().await?;
            reply(shop(&ctx)?.place_items(id(&ctx, "id")?, &items).await)
        })
        .get_async("/bounded/users/:id", |_, ctx| async move {
            reply(shop(&ctx)?.find_user_bounded(id(&ctx, "id")?).await)
        })
        .post_async("/bounded/users/:id/orders", |mut req, ctx| async move {
            let order: NewOrder = req.json().await?;
            reply(
                shop(&ctx)?
                    .place_order_bounded(id(&ctx, "id")?, &order)
                    .await,
            )
        })
        .get_async("/stats", |_, ctx| async move {
            reply(shop(&ctx)?.stats().await)
        })
        .get_async("/broken/syntax", |_, ctx| async move {
            reply(shop(&ctx)?.broken_syntax().await)
        })
        .get_async("/broken/missing-table", |_, ctx| async move {
            reply(shop(&ctx)?.missing_table().await)
        })
        .get_async("/wrapped/users/:id", |_, ctx| async move {
            reply(wrapped::find_user(&ctx.env, id(&ctx, "id")?).await)
        })
        .get_async("/wrapped/users/:id/orders", |_, ctx| async move {
            reply(wrapped::user_orders(&ctx.env, id(&ctx, "id")?).await)
        })
        .get_async("/wrapped/users/:id/order-items", |_, ctx| async move {
            reply(wrapped::order_items(&ctx.env, id(&ctx, "id")?).await)
        })
        .post_async("/wrapped/users/:id/orders", |mut req, ctx| async move {
            let order: NewOrder = req.json().await?;
            reply(wrapped::place_order(&ctx.env, id(&ctx, "id")?, &order).await)
        })
        .post_async(
            "/wrapped/users/:id/orders/batch",
            |mut req, ctx| async move {
                let orders: Vec<NewOrder> = req.json().await?;
                reply(wrapped::place_orders(&ctx.env, id(&ctx, "id")?, &orders).await)
            },
        )
        .get_async("/wrapped/stats", |_, ctx| async move {
            reply(wrapped::stats(&ctx.env).await)
        })
        .get_async("/wrapped/exec", |_, ctx| async move {
            reply(wrapped::exec_read(&ctx.env).await)
        })
        .get_async("/wrapped/session/users/:id", |_, ctx| async move {
            reply(wrapped::find_user_in_session(&ctx.env, id(&ctx, "id")?).await)
        })
        .run(req, env)
        .await
}

#[derive(Deserialize)]
struct NewUser {
    email: String,
    name: String,
}

fn shop(ctx: &RouteContext<()>) -> Result<Shop> {
    Ok(Shop::new(ctx.env.d1("DB")?))
}

fn id(ctx: &RouteContext<()>, name: &str) -> Result<i64> {
    ctx.param(name)
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| format!("`{name}` must be an integer").into())
}

/// `200 {"value": ...}`, or `500 {"error": ..., "class": ...}` with the class d1-retry
/// gave the error, so a caller (and the end-to-end tests) see what was decided.
fn reply<T: Serialize>(result: Result<T>) -> Result<Response> {
    match result {
        Ok(value) => Response::from_json(&json!({ "value": value })),
        Err(error) => {
            let body = json!({
                "error": error_text(&error),
                "class": d1_retry::classify(&error).as_str(),
            });
            Ok(Response::from_json(&body)?.with_status(500))
        }
    }
}

/// The error's message. A `D1Error` must not be formatted with `Display` (it panics in
/// `worker` 0.8.7), so the D1 variant is read from its JavaScript error.
fn error_text(error: &worker::Error) -> String {
    match error {
        worker::Error::D1(d1) => {
            let js: &worker::js_sys::Error = d1.as_ref();
            String::from(js.message())
        }
        other => other.to_string(),
    }
}
