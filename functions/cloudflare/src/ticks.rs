//! The `ticks` role: the worker consuming the tick queue
//! (`wrangler.ticks.toml`). The role boundary is this module's one
//! `#[cfg(feature = "ticks")]` in `lib.rs`.

use agent_zero_app::Tick;
use worker::{Context, Date, Env, MessageBatch, MessageExt, QueueRetryOptionsBuilder, event};

use crate::{CloudflareHost, settings_of};

/// The Queues consumer: one tick per message. A message whose tick did
/// nothing durable is retried (redelivery resumes from the task log); the
/// engine makes a redelivered tick a no-op once it was committed.
#[event(queue)]
async fn queue(batch: MessageBatch<Tick>, env: Env, _ctx: Context) -> worker::Result<()> {
    let host = CloudflareHost::new(&env);
    let settings = settings_of(&env);
    for message in batch.messages()? {
        let now = Date::now().as_millis();
        let result = agent_zero_app::run_tick(&host, &settings, message.body(), now).await;
        // The message's id is the request id of a tick's line.
        let line = agent_zero_app::log_line::tick_line(
            &settings,
            &message.id(),
            message.body(),
            &result,
            Date::now().as_millis().saturating_sub(now),
        );
        worker::console_log!("{line}");
        match result {
            Ok(_) => message.ack(),
            Err(_) => {
                let delay = agent_zero_app::hosting::retry_delay_seconds(now, message.timestamp().as_millis());
                message.retry_with_options(&QueueRetryOptionsBuilder::new().with_delay_seconds(delay).build());
            }
        }
    }
    Ok(())
}
