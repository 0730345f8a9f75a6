-- marts.size_share_trend: one row per (granularity, GPU size bucket): trend of the bucket's share
-- of GPU-hours across full months ('month') or ISO weeks ('week'), from marts.size_buckets.
-- This file only (re)creates the empty table; rows are computed in Python by
-- gpusre.models.job_mix.trends.write_size_share_trend (OLS with Newey-West HAC errors + Kendall tau).
-- Slope and test columns are NULL when direction = 'insufficient data' (fewer than 3 periods).
CREATE OR REPLACE TABLE marts.size_share_trend (
    granularity      VARCHAR NOT NULL,  -- 'month' | 'week'
    size_bucket      VARCHAR NOT NULL,
    bucket_order     INTEGER NOT NULL,
    n_periods        INTEGER NOT NULL,  -- periods in the series (partial first/last dropped)
    first_share      DOUBLE,            -- share of GPU-hours in the first / last period used
    last_share       DOUBLE,
    slope_per_period DOUBLE,            -- OLS slope of share (0..1) per month / week
    slope_ci_low     DOUBLE,            -- 95 % confidence interval of the slope (HAC)
    slope_ci_high    DOUBLE,
    p_value          DOUBLE,            -- HAC t-test of slope = 0
    kendall_tau      DOUBLE,
    kendall_p        DOUBLE,
    direction        VARCHAR NOT NULL   -- 'rising' | 'falling' | 'no significant trend' | 'insufficient data'
);
