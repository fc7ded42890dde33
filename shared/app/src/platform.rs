//! The published limits of each platform a deployment can run on.
//!
//! A *profile* ([`Limits`]) is what one platform ([`Platform`]) lets one
//! deployment do: how long an invocation that runs ticks may last, its CPU
//! time, its outbound requests, its key-value operations per day, and how
//! many and how large the keys and values it stores may be. The operator
//! picks the profile with `AGENT_ZERO_PLATFORM`; a host that is given none
//! assumes [`Platform::default_for_host`].
//!
//! Every figure is one the platform publishes, and carries its source: the
//! page's address and a few words of what it says ([`Limit::source`]). A
//! limit is `None` where the platform publishes no such figure, or where
//! none applies (Workers KV on the paid plan has no daily cap; `spin up` sets
//! no time limit per request). Nothing here is measured or guessed: where a
//! page gives "1 MB" without saying whether it means 10^6 or 2^20 bytes, the
//! smaller reading is kept, so staying inside it stays inside either.
//! `docs/platforms.md` has the same figures as tables, what follows from each
//! for Agent Zero Edge, and the figures looked for and not found.

/// One published figure and where it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limit {
    /// The figure, in the unit its field names (ms, bytes, a count).
    pub value: u64,
    /// The page it was read on and a few words of what it says.
    pub source: &'static str,
}

/// Every limit of one platform that the product must stay inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Longest one invocation that runs ticks may take, wall clock (ms): a
    /// Queues consumer on Cloudflare, a request handler on Spin.
    pub wall_clock_ms: Option<Limit>,
    /// CPU time per invocation (ms).
    pub cpu_ms: Option<Limit>,
    /// Outbound requests (subrequests) per invocation.
    pub subrequests_per_invocation: Option<Limit>,
    /// Outbound requests per hour for the whole app.
    pub outbound_per_hour: Option<Limit>,
    /// Key-value store reads per day (Workers KV on Cloudflare).
    pub kv_reads_per_day: Option<Limit>,
    /// Key-value store writes per day (Workers KV on Cloudflare).
    pub kv_writes_per_day: Option<Limit>,
    /// Key-value store deletes per day (Workers KV on Cloudflare).
    pub kv_deletes_per_day: Option<Limit>,
    /// Key-value store list requests per day (Workers KV on Cloudflare).
    pub kv_lists_per_day: Option<Limit>,
    /// Keys one store may hold.
    pub kv_keys: Option<Limit>,
    /// Largest value one key may hold (bytes), in the smallest store the
    /// product writes task records to on that platform (Durable Object
    /// storage on Cloudflare, the key-value store on Spin).
    pub value_bytes: Option<Limit>,
    /// Longest key (bytes), in the store with the shortest keys the product
    /// writes to (Workers KV on Cloudflare, the key-value store on Spin).
    pub key_bytes: Option<Limit>,
}

/// A platform a user can deploy Agent Zero Edge to: the values of
/// `AGENT_ZERO_PLATFORM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Platform {
    /// Cloudflare Workers on the Workers Free plan.
    CloudflareFree,
    /// Cloudflare Workers on the Workers Paid plan, default settings.
    CloudflarePaid,
    /// Fermyon Cloud (Starter and Growth plans: their limits are the same).
    FermyonCloud,
    /// Akamai Functions (formerly Fermyon Wasm Functions), default limits.
    AkamaiFunctions,
    /// Your own `spin up`: Spin sets no limits of its own.
    SpinSelfHosted,
}

// Each page's address, once: `concat!` takes only literals, so macros.
/// The Workers limits page (Workers Free and Paid plans).
macro_rules! cf_workers {
    () => {
        "https://developers.cloudflare.com/workers/platform/limits/"
    };
}
/// The Queues limits page.
macro_rules! cf_queues {
    () => {
        "https://developers.cloudflare.com/queues/platform/limits/"
    };
}
/// The Workers KV pricing page (the free plan's daily operations).
macro_rules! cf_kv_pricing {
    () => {
        "https://developers.cloudflare.com/kv/platform/pricing/"
    };
}
/// Fermyon Cloud's quotas page.
macro_rules! fermyon_faq {
    () => {
        "https://developer.fermyon.com/cloud/faq"
    };
}
/// Akamai Functions' quotas page.
macro_rules! akamai_limits {
    () => {
        "https://techdocs.akamai.com/akamai-functions/docs/quotas-and-limits"
    };
}

/// A figure and its source, in a `const` context.
const fn limit(value: u64, source: &'static str) -> Option<Limit> {
    Some(Limit { value, source })
}

/// No limit at all: the base every profile starts from.
const UNLIMITED: Limits = Limits {
    wall_clock_ms: None,
    cpu_ms: None,
    subrequests_per_invocation: None,
    outbound_per_hour: None,
    kv_reads_per_day: None,
    kv_writes_per_day: None,
    kv_deletes_per_day: None,
    kv_lists_per_day: None,
    kv_keys: None,
    value_bytes: None,
    key_bytes: None,
};

/// What both Workers plans share: the Queues consumer's wall clock and the
/// stores' sizes. Workers KV and Durable Objects publish no cap on keys
/// ("Keys/namespace: Unlimited"), so `kv_keys` stays `None`.
const CLOUDFLARE: Limits = Limits {
    wall_clock_ms: limit(
        15 * 60 * 1_000,
        // Also https://developers.cloudflare.com/workers/platform/limits/
        // (Duration: "Queue Consumer | 15 min"), for both plans.
        concat!(cf_queues!(), " — 'Consumer duration (wall clock time): 15 minutes'"),
    ),
    value_bytes: limit(
        2_000_000,
        concat!(
            "https://developers.cloudflare.com/durable-objects/platform/limits/",
            " — 'Value size: Key and value combined cannot exceed 2 MB' (SQLite-backed Durable Objects)"
        ),
    ),
    key_bytes: limit(512, concat!("https://developers.cloudflare.com/kv/platform/limits/", " — 'Key size: 512 bytes'")),
    ..UNLIMITED
};

/// Cloudflare Workers Free.
const CLOUDFLARE_FREE: Limits = Limits {
    cpu_ms: limit(10, concat!(cf_workers!(), " — 'CPU time: 10 ms' (Workers Free)")),
    subrequests_per_invocation: limit(50, concat!(cf_workers!(), " — 'Subrequests per invocation: 50' (Workers Free)")),
    kv_reads_per_day: limit(100_000, concat!(cf_kv_pricing!(), " — 'Read requests: 100,000 / day' (Free plan)")),
    kv_writes_per_day: limit(1_000, concat!(cf_kv_pricing!(), " — 'Write requests: 1,000 / day' (Free plan)")),
    kv_deletes_per_day: limit(1_000, concat!(cf_kv_pricing!(), " — 'Delete requests: 1,000 / day' (Free plan)")),
    kv_lists_per_day: limit(1_000, concat!(cf_kv_pricing!(), " — 'List requests: 1,000 / day' (Free plan)")),
    ..CLOUDFLARE
};

/// Cloudflare Workers Paid, at its defaults (`limits.cpu_ms` unset). Workers
/// KV has no daily cap on this plan (monthly inclusions, then billed).
const CLOUDFLARE_PAID: Limits = Limits {
    cpu_ms: limit(
        30_000,
        concat!(cf_queues!(), " — 'Consumer CPU time: 30 seconds (default). Configurable to 5 minutes'"),
    ),
    subrequests_per_invocation: limit(
        10_000,
        concat!(cf_workers!(), " — 'Subrequests per invocation: 10,000 (up to 10M)' (Workers Paid)"),
    ),
    ..CLOUDFLARE
};

/// Fermyon Cloud (Starter and Growth plans).
const FERMYON_CLOUD: Limits = Limits {
    wall_clock_ms: limit(30_000, concat!(fermyon_faq!(), " — 'Request handler duration (seconds)*: 30'")),
    outbound_per_hour: limit(500, concat!(fermyon_faq!(), " — 'Outbound requests per hour per Spin app*: 500'")),
    kv_keys: limit(1_024, concat!(fermyon_faq!(), " — 'Key value maximum keys*: 1,024'")),
    value_bytes: limit(1_000_000, concat!(fermyon_faq!(), " — 'Key value store value size (MB)*: 1'")),
    key_bytes: limit(255, concat!(fermyon_faq!(), " — 'Key value store key size (bytes)*: 255'")),
    ..UNLIMITED
};

/// Akamai Functions' default limits (public preview).
const AKAMAI_FUNCTIONS: Limits = Limits {
    wall_clock_ms: limit(30_000, concat!(akamai_limits!(), " — 'Request handler duration: 30 seconds'")),
    value_bytes: limit(1_000_000, concat!(akamai_limits!(), " — 'Maximum value size: 1 MB'")),
    key_bytes: limit(8_000, concat!(akamai_limits!(), " — 'Maximum key size: 8 KB'")),
    ..UNLIMITED
};

impl Platform {
    /// Every platform, in the order the documentation lists them.
    pub const ALL: [Self; 5] =
        [Self::CloudflareFree, Self::CloudflarePaid, Self::FermyonCloud, Self::AkamaiFunctions, Self::SpinSelfHosted];

    /// The setting's spelling (`cloudflare-free`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Self::CloudflareFree => "cloudflare-free",
            Self::CloudflarePaid => "cloudflare-paid",
            Self::FermyonCloud => "fermyon-cloud",
            Self::AkamaiFunctions => "akamai-functions",
            Self::SpinSelfHosted => "spin-self-hosted",
        }
    }

    /// Parses the setting's spelling; `None` for anything else.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|platform| platform.name() == name)
    }

    /// The platform's published limits.
    pub const fn limits(self) -> Limits {
        match self {
            Self::CloudflareFree => CLOUDFLARE_FREE,
            Self::CloudflarePaid => CLOUDFLARE_PAID,
            Self::FermyonCloud => FERMYON_CLOUD,
            Self::AkamaiFunctions => AKAMAI_FUNCTIONS,
            Self::SpinSelfHosted => UNLIMITED,
        }
    }

    /// Which host runs it: "cloudflare" or "spin".
    pub const fn host(self) -> &'static str {
        match self {
            Self::CloudflareFree | Self::CloudflarePaid => "cloudflare",
            Self::FermyonCloud | Self::AkamaiFunctions | Self::SpinSelfHosted => "spin",
        }
    }

    /// The profile a host assumes when the operator names none: the
    /// stricter paid/free choice is the operator's, so this is
    /// `CloudflarePaid` on "cloudflare" and `SpinSelfHosted` on "spin";
    /// `None` for another host name.
    pub fn default_for_host(host: &str) -> Option<Self> {
        match host {
            "cloudflare" => Some(Self::CloudflarePaid),
            "spin" => Some(Self::SpinSelfHosted),
            _ => None,
        }
    }
}

/// Safety margin kept at least, inside any wall clock (ms).
const MIN_MARGIN_MS: u64 = 5_000;

/// How long a tick may take on `limits`: the wall clock less a safety margin
/// (the larger of 5 s and a sixth of it), or `None` when the platform sets
/// no wall clock. A wall clock of 5 s or less leaves no time (`Some(0)`).
pub fn tick_budget_ms(limits: &Limits) -> Option<u64> {
    let wall = limits.wall_clock_ms?.value;
    Some(wall.saturating_sub(MIN_MARGIN_MS.max(wall / 6)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every limit of `limits` with its field's name. Destructured, so a new
    /// field does not compile until it is listed here too.
    fn entries(limits: &Limits) -> [(&'static str, Option<Limit>); 11] {
        let Limits {
            wall_clock_ms,
            cpu_ms,
            subrequests_per_invocation,
            outbound_per_hour,
            kv_reads_per_day,
            kv_writes_per_day,
            kv_deletes_per_day,
            kv_lists_per_day,
            kv_keys,
            value_bytes,
            key_bytes,
        } = *limits;
        [
            ("wall_clock_ms", wall_clock_ms),
            ("cpu_ms", cpu_ms),
            ("subrequests_per_invocation", subrequests_per_invocation),
            ("outbound_per_hour", outbound_per_hour),
            ("kv_reads_per_day", kv_reads_per_day),
            ("kv_writes_per_day", kv_writes_per_day),
            ("kv_deletes_per_day", kv_deletes_per_day),
            ("kv_lists_per_day", kv_lists_per_day),
            ("kv_keys", kv_keys),
            ("value_bytes", value_bytes),
            ("key_bytes", key_bytes),
        ]
    }

    #[test]
    fn every_platform_round_trips_through_its_name() {
        for platform in Platform::ALL {
            assert_eq!(Platform::parse(platform.name()), Some(platform), "{platform:?}");
            // The health route serializes the platform: the same spelling.
            assert_eq!(serde_json::to_value(platform).unwrap(), platform.name(), "{platform:?}");
        }
        let mut names: Vec<&str> = Platform::ALL.iter().map(|p| p.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Platform::ALL.len(), "names are distinct: {names:?}");
    }

    #[test]
    fn parse_refuses_unknown_names_and_other_spellings() {
        for name in [
            "",
            "heroku",
            "cloudflare",
            "spin",
            "Cloudflare-Free",
            "CLOUDFLARE-PAID",
            "Fermyon-Cloud",
            "cloudflare_free",
            "CloudflareFree",
            " spin-self-hosted",
            "akamai-functions ",
        ] {
            assert_eq!(Platform::parse(name), None, "{name:?}");
        }
    }

    #[test]
    fn every_published_figure_cites_a_page() {
        for platform in Platform::ALL {
            for (field, limit) in entries(&platform.limits()) {
                let Some(limit) = limit else { continue };
                assert!(limit.source.starts_with("https://"), "{}.{field}: {:?}", platform.name(), limit.source);
                assert!(
                    limit.source.contains(" — '"),
                    "{}.{field} quotes its page: {:?}",
                    platform.name(),
                    limit.source
                );
                assert!(limit.value > 0, "{}.{field} is a figure, not a placeholder", platform.name());
            }
        }
    }

    #[test]
    fn spin_self_hosted_sets_no_limits() {
        let limits = Platform::SpinSelfHosted.limits();
        for (field, limit) in entries(&limits) {
            assert_eq!(limit, None, "{field}");
        }
        assert_eq!(tick_budget_ms(&limits), None);
    }

    #[test]
    fn the_published_figures() {
        let value = |limit: Option<Limit>| limit.map(|l| l.value);
        let free = Platform::CloudflareFree.limits();
        assert_eq!(value(free.wall_clock_ms), Some(900_000));
        assert_eq!(value(free.cpu_ms), Some(10));
        assert_eq!(value(free.subrequests_per_invocation), Some(50));
        assert_eq!(
            [free.kv_reads_per_day, free.kv_writes_per_day, free.kv_deletes_per_day, free.kv_lists_per_day].map(value),
            [Some(100_000), Some(1_000), Some(1_000), Some(1_000)]
        );
        let paid = Platform::CloudflarePaid.limits();
        assert_eq!(value(paid.cpu_ms), Some(30_000));
        assert_eq!(value(paid.subrequests_per_invocation), Some(10_000));
        assert_eq!(paid.kv_writes_per_day, None, "no daily cap on the paid plan");
        let fermyon = Platform::FermyonCloud.limits();
        assert_eq!(value(fermyon.wall_clock_ms), Some(30_000));
        assert_eq!(value(fermyon.outbound_per_hour), Some(500));
        assert_eq!(value(fermyon.kv_keys), Some(1_024));
        assert_eq!(value(Platform::AkamaiFunctions.limits().wall_clock_ms), Some(30_000));
    }

    #[test]
    fn a_tick_leaves_a_margin_inside_the_wall_clock() {
        let with_wall = |ms: u64| Limits { wall_clock_ms: limit(ms, "https://example.test — 'x'"), ..UNLIMITED };
        assert_eq!(tick_budget_ms(&with_wall(30_000)), Some(25_000), "30 s: 5 s margin");
        assert_eq!(tick_budget_ms(&with_wall(15 * 60_000)), Some(750_000), "15 min: a sixth, 12.5 min left");
        assert_eq!(tick_budget_ms(&with_wall(60_000)), Some(50_000), "a sixth of 60 s is 10 s");
        assert_eq!(tick_budget_ms(&with_wall(12_000)), Some(7_000), "a sixth of 12 s is under 5 s");
        assert_eq!(tick_budget_ms(&with_wall(4_000)), Some(0), "no time left inside 4 s");
        assert_eq!(tick_budget_ms(&UNLIMITED), None);
        assert_eq!(tick_budget_ms(&Platform::FermyonCloud.limits()), Some(25_000));
        assert_eq!(tick_budget_ms(&Platform::AkamaiFunctions.limits()), Some(25_000));
        assert_eq!(tick_budget_ms(&Platform::CloudflareFree.limits()), Some(750_000));
        assert_eq!(tick_budget_ms(&Platform::CloudflarePaid.limits()), Some(750_000));
    }

    #[test]
    fn each_host_has_a_default_profile_of_its_own() {
        assert_eq!(Platform::default_for_host("cloudflare"), Some(Platform::CloudflarePaid));
        assert_eq!(Platform::default_for_host("spin"), Some(Platform::SpinSelfHosted));
        for other in ["test", "", "Cloudflare", "SPIN", "fermyon-cloud"] {
            assert_eq!(Platform::default_for_host(other), None, "{other:?}");
        }
        for platform in Platform::ALL {
            let default = Platform::default_for_host(platform.host());
            assert_eq!(default.map(Platform::host), Some(platform.host()), "{platform:?}");
        }
        assert_eq!(Platform::CloudflareFree.host(), "cloudflare");
        assert_eq!(Platform::FermyonCloud.host(), "spin");
        assert_eq!(Platform::AkamaiFunctions.host(), "spin");
    }

    /// Every limit the README's platform table states is the profile's
    /// own figure: change a profile and the README's row fails here until
    /// it says the same.
    #[test]
    fn the_readmes_platform_table_states_the_profiles_figures() {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
        let row = |label: &str| -> String {
            let lines: Vec<&str> = readme.lines().filter(|l| l.starts_with(&format!("| {label} |"))).collect();
            assert_eq!(lines.len(), 1, "one README row for {label}");
            lines[0].to_owned()
        };
        let value = |limit: Option<Limit>| limit.map(|l| l.value);
        let paid = Platform::CloudflarePaid.limits();
        let free = Platform::CloudflareFree.limits();
        let fermyon = Platform::FermyonCloud.limits();
        let akamai = Platform::AkamaiFunctions.limits();
        let claims: [(&str, &str, Option<u64>, u64); 9] = [
            ("Cloudflare Workers Paid", "may run 15 min", value(paid.wall_clock_ms), 15 * 60_000),
            ("Cloudflare Workers Paid", "30 s CPU by default", value(paid.cpu_ms), 30_000),
            ("Cloudflare Workers Free", "10 ms CPU", value(free.cpu_ms), 10),
            ("Cloudflare Workers Free", "50 subrequests per invocation", value(free.subrequests_per_invocation), 50),
            ("Cloudflare Workers Free", "1,000 KV writes a day", value(free.kv_writes_per_day), 1_000),
            (
                "Cloudflare Workers Free",
                "288 KV lists (the 10-minute cron) of 1,000",
                value(free.kv_lists_per_day),
                1_000,
            ),
            ("Fermyon Cloud", "30 s per request handler", value(fermyon.wall_clock_ms), 30_000),
            ("Fermyon Cloud", "500 outbound requests an hour", value(fermyon.outbound_per_hour), 500),
            ("Akamai Functions", "30 s per request handler", value(akamai.wall_clock_ms), 30_000),
        ];
        for (label, claim, profile, stated) in claims {
            assert!(row(label).contains(claim), "the README's {label} row no longer says `{claim}`");
            assert_eq!(profile, Some(stated), "{label}: the README says `{claim}`");
        }
        assert!(row("Fermyon Cloud").contains("1,024 keys per store"));
        assert_eq!(value(fermyon.kv_keys), Some(1_024));
    }
}
