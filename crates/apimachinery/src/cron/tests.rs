//! robfig/cron v3.0.1's tables (`spec_test.go`, `parser_test.go`), ported to the
//! standard five-field parser: rows of the seconds parser drop their seconds field
//! (always `0`, or a seconds step whose expected time keeps second 0 here), and Go's
//! `time.Local` is UTC.

use super::*;

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn bounds(min: u64, max: u64) -> Bounds {
    Bounds {
        min,
        max,
        names: &[],
        base: 0,
    }
}

/// Zero-based bit set helper.
fn bits(values: &[u64]) -> u64 {
    values.iter().fold(0, |acc, v| acc | (1 << v))
}

fn spec(s: &str) -> SpecSchedule {
    match parse_standard(s) {
        Ok(Schedule::Spec(s)) => s,
        other => panic!("{s}: {other:?}"),
    }
}

fn fields(s: &SpecSchedule) -> [u64; 6] {
    [s.second, s.minute, s.hour, s.dom, s.month, s.dow]
}

#[test]
fn activation() {
    // spec_test.go TestActivation: does `spec` fire exactly at `time`?
    let rows: &[(&str, &str, bool)] = &[
        // every fifteen minutes
        ("2012-07-09T15:00:00Z", "0/15 * * * *", true),
        ("2012-07-09T15:45:00Z", "0/15 * * * *", true),
        ("2012-07-09T15:40:00Z", "0/15 * * * *", false),
        // every fifteen minutes, starting at 5 minutes
        ("2012-07-09T15:05:00Z", "5/15 * * * *", true),
        ("2012-07-09T15:20:00Z", "5/15 * * * *", true),
        ("2012-07-09T15:50:00Z", "5/15 * * * *", true),
        // named months
        ("2012-07-15T15:00:00Z", "0/15 * * Jul *", true),
        ("2012-07-15T15:00:00Z", "0/15 * * Jun *", false),
        // everything set
        ("2012-07-15T08:30:00Z", "30 08 ? Jul Sun", true),
        ("2012-07-15T08:30:00Z", "30 08 15 Jul ?", true),
        ("2012-07-16T08:30:00Z", "30 08 ? Jul Sun", false),
        ("2012-07-16T08:30:00Z", "30 08 15 Jul ?", false),
        // predefined schedules
        ("2012-07-09T15:00:00Z", "@hourly", true),
        ("2012-07-09T15:04:00Z", "@hourly", false),
        ("2012-07-09T15:00:00Z", "@daily", false),
        ("2012-07-09T00:00:00Z", "@daily", true),
        ("2012-07-09T00:00:00Z", "@weekly", false),
        ("2012-07-08T00:00:00Z", "@weekly", true),
        ("2012-07-08T01:00:00Z", "@weekly", false),
        ("2012-07-08T00:00:00Z", "@monthly", false),
        ("2012-07-01T00:00:00Z", "@monthly", true),
        // day of month and day of week both restricted: either matches
        ("2012-07-15T00:00:00Z", "* * 1,15 * Sun", true),
        ("2012-06-15T00:00:00Z", "* * 1,15 * Sun", true),
        ("2012-08-01T00:00:00Z", "* * 1,15 * Sun", true),
        ("2012-07-15T00:00:00Z", "* * */10 * Sun", true),
        // one of them unrestricted: both must match
        ("2012-07-15T00:00:00Z", "* * * * Mon", false),
        ("2012-07-09T00:00:00Z", "* * 1,15 * *", false),
        ("2012-07-15T00:00:00Z", "* * 1,15 * *", true),
        ("2012-07-15T00:00:00Z", "* * */2 * Sun", true),
    ];
    for (time, s, expected) in rows {
        let sched = parse_standard(s).unwrap();
        let t = ts(time);
        let before = Timestamp::from_second(t.as_second() - 1).unwrap();
        assert_eq!(sched.next(before) == t, *expected, "{s} at {time}");
    }
}

#[test]
fn next() {
    // spec_test.go TestNext
    let rows: &[(&str, &str, &str)] = &[
        // simple cases
        (
            "2012-07-09T14:45:00Z",
            "0/15 * * * *",
            "2012-07-09T15:00:00Z",
        ),
        (
            "2012-07-09T14:59:00Z",
            "0/15 * * * *",
            "2012-07-09T15:00:00Z",
        ),
        (
            "2012-07-09T14:59:59Z",
            "0/15 * * * *",
            "2012-07-09T15:00:00Z",
        ),
        // wrap around hours
        (
            "2012-07-09T15:45:00Z",
            "20-35/15 * * * *",
            "2012-07-09T16:20:00Z",
        ),
        // wrap around days
        (
            "2012-07-09T23:46:00Z",
            "*/15 * * * *",
            "2012-07-10T00:00:00Z",
        ),
        (
            "2012-07-09T23:45:00Z",
            "20-35/15 * * * *",
            "2012-07-10T00:20:00Z",
        ),
        (
            "2012-07-09T23:35:51Z",
            "20-35/15 * * * *",
            "2012-07-10T00:20:00Z",
        ),
        (
            "2012-07-09T23:35:51Z",
            "20-35/15 1/2 * * *",
            "2012-07-10T01:20:00Z",
        ),
        (
            "2012-07-09T23:35:51Z",
            "20-35/15 10-12 * * *",
            "2012-07-10T10:20:00Z",
        ),
        (
            "2012-07-09T23:35:51Z",
            "20-35/15 1/2 */2 * *",
            "2012-07-11T01:20:00Z",
        ),
        (
            "2012-07-09T23:35:51Z",
            "20-35/15 * 9-20 * *",
            "2012-07-10T00:20:00Z",
        ),
        (
            "2012-07-09T23:35:51Z",
            "20-35/15 * 9-20 Jul *",
            "2012-07-10T00:20:00Z",
        ),
        // wrap around months
        (
            "2012-07-09T23:35:00Z",
            "0 0 9 Apr-Oct ?",
            "2012-08-09T00:00:00Z",
        ),
        (
            "2012-07-09T23:35:00Z",
            "0 0 */5 Apr,Aug,Oct Mon",
            "2012-08-01T00:00:00Z",
        ),
        (
            "2012-07-09T23:35:00Z",
            "0 0 */5 Oct Mon",
            "2012-10-01T00:00:00Z",
        ),
        // wrap around years
        (
            "2012-07-09T23:35:00Z",
            "0 0 * Feb Mon",
            "2013-02-04T00:00:00Z",
        ),
        (
            "2012-07-09T23:35:00Z",
            "0 0 * Feb Mon/2",
            "2013-02-01T00:00:00Z",
        ),
        // wrap around minute, hour, day, month and year
        ("2012-12-31T23:59:45Z", "* * * * *", "2013-01-01T00:00:00Z"),
        // leap year
        (
            "2012-07-09T23:35:00Z",
            "0 0 29 Feb ?",
            "2016-02-29T00:00:00Z",
        ),
        // DST 2am EST (-5) -> 3am EDT (-4)
        (
            "2012-03-11T00:00:00-05:00",
            "TZ=America/New_York 30 2 11 Mar ?",
            "2013-03-11T02:30:00-04:00",
        ),
        // hourly job
        (
            "2012-03-11T00:00:00-05:00",
            "TZ=America/New_York 0 * * * ?",
            "2012-03-11T01:00:00-05:00",
        ),
        (
            "2012-03-11T01:00:00-05:00",
            "TZ=America/New_York 0 * * * ?",
            "2012-03-11T03:00:00-04:00",
        ),
        (
            "2012-03-11T03:00:00-04:00",
            "TZ=America/New_York 0 * * * ?",
            "2012-03-11T04:00:00-04:00",
        ),
        (
            "2012-03-11T04:00:00-04:00",
            "TZ=America/New_York 0 * * * ?",
            "2012-03-11T05:00:00-04:00",
        ),
        // hourly job using CRON_TZ
        (
            "2012-03-11T00:00:00-05:00",
            "CRON_TZ=America/New_York 0 * * * ?",
            "2012-03-11T01:00:00-05:00",
        ),
        (
            "2012-03-11T01:00:00-05:00",
            "CRON_TZ=America/New_York 0 * * * ?",
            "2012-03-11T03:00:00-04:00",
        ),
        (
            "2012-03-11T03:00:00-04:00",
            "CRON_TZ=America/New_York 0 * * * ?",
            "2012-03-11T04:00:00-04:00",
        ),
        (
            "2012-03-11T04:00:00-04:00",
            "CRON_TZ=America/New_York 0 * * * ?",
            "2012-03-11T05:00:00-04:00",
        ),
        // 1am nightly job
        (
            "2012-03-11T00:00:00-05:00",
            "TZ=America/New_York 0 1 * * ?",
            "2012-03-11T01:00:00-05:00",
        ),
        (
            "2012-03-11T01:00:00-05:00",
            "TZ=America/New_York 0 1 * * ?",
            "2012-03-12T01:00:00-04:00",
        ),
        // 2am nightly job (skipped)
        (
            "2012-03-11T00:00:00-05:00",
            "TZ=America/New_York 0 2 * * ?",
            "2012-03-12T02:00:00-04:00",
        ),
        // DST 2am EDT (-4) -> 1am EST (-5)
        (
            "2012-11-04T00:00:00-04:00",
            "TZ=America/New_York 30 2 04 Nov ?",
            "2012-11-04T02:30:00-05:00",
        ),
        (
            "2012-11-04T01:45:00-04:00",
            "TZ=America/New_York 30 1 04 Nov ?",
            "2012-11-04T01:30:00-05:00",
        ),
        // hourly job
        (
            "2012-11-04T00:00:00-04:00",
            "TZ=America/New_York 0 * * * ?",
            "2012-11-04T01:00:00-04:00",
        ),
        (
            "2012-11-04T01:00:00-04:00",
            "TZ=America/New_York 0 * * * ?",
            "2012-11-04T01:00:00-05:00",
        ),
        (
            "2012-11-04T01:00:00-05:00",
            "TZ=America/New_York 0 * * * ?",
            "2012-11-04T02:00:00-05:00",
        ),
        // 1am nightly job (runs twice)
        (
            "2012-11-04T00:00:00-04:00",
            "TZ=America/New_York 0 1 * * ?",
            "2012-11-04T01:00:00-04:00",
        ),
        (
            "2012-11-04T01:00:00-04:00",
            "TZ=America/New_York 0 1 * * ?",
            "2012-11-04T01:00:00-05:00",
        ),
        (
            "2012-11-04T01:00:00-05:00",
            "TZ=America/New_York 0 1 * * ?",
            "2012-11-05T01:00:00-05:00",
        ),
        // 2am nightly job
        (
            "2012-11-04T00:00:00-04:00",
            "TZ=America/New_York 0 2 * * ?",
            "2012-11-04T02:00:00-05:00",
        ),
        (
            "2012-11-04T02:00:00-05:00",
            "TZ=America/New_York 0 2 * * ?",
            "2012-11-05T02:00:00-05:00",
        ),
        // 3am nightly job
        (
            "2012-11-04T00:00:00-04:00",
            "TZ=America/New_York 0 3 * * ?",
            "2012-11-04T03:00:00-05:00",
        ),
        (
            "2012-11-04T03:00:00-05:00",
            "TZ=America/New_York 0 3 * * ?",
            "2012-11-05T03:00:00-05:00",
        ),
        // unsatisfiable
        ("2012-07-09T23:35:00Z", "0 0 30 Feb ?", ""),
        ("2012-07-09T23:35:00Z", "0 0 31 Apr ?", ""),
        // midnight does not exist on a DST day (robfig/cron#157)
        (
            "2018-10-17T05:00:00-04:00",
            "TZ=America/Sao_Paulo 0 9 10 * ?",
            "2018-11-10T06:00:00-05:00",
        ),
        (
            "2018-02-14T05:00:00-05:00",
            "TZ=America/Sao_Paulo 0 9 22 * ?",
            "2018-02-22T07:00:00-05:00",
        ),
    ];
    for (time, s, expected) in rows {
        let actual = parse_standard(s).unwrap().next(ts(time));
        let expected = if expected.is_empty() {
            zero_time()
        } else {
            ts(expected)
        };
        assert_eq!(actual, expected, "{s} after {time}");
    }
}

#[test]
fn next_in_the_callers_zone() {
    // TestNext's rows whose time, not schedule, is in New York: a schedule without a
    // zone is read in the zone of the time given
    let ny = load_location("America/New_York").unwrap();
    let rows: &[(&str, &str, &str)] = &[
        (
            "2012-11-04T00:00:00-04:00",
            "0 * * * ?",
            "2012-11-04T01:00:00-04:00",
        ),
        (
            "2012-11-04T01:00:00-04:00",
            "0 * * * ?",
            "2012-11-04T01:00:00-05:00",
        ),
        (
            "2012-11-04T01:00:00-05:00",
            "0 * * * ?",
            "2012-11-04T02:00:00-05:00",
        ),
        (
            "2012-11-04T00:00:00-04:00",
            "0 1 * * ?",
            "2012-11-04T01:00:00-04:00",
        ),
        (
            "2012-11-04T01:00:00-04:00",
            "0 1 * * ?",
            "2012-11-04T01:00:00-05:00",
        ),
        (
            "2012-11-04T01:00:00-05:00",
            "0 1 * * ?",
            "2012-11-05T01:00:00-05:00",
        ),
        (
            "2012-11-04T00:00:00-04:00",
            "0 2 * * ?",
            "2012-11-04T02:00:00-05:00",
        ),
        (
            "2012-11-04T02:00:00-05:00",
            "0 2 * * ?",
            "2012-11-05T02:00:00-05:00",
        ),
        (
            "2012-11-04T00:00:00-04:00",
            "0 3 * * ?",
            "2012-11-04T03:00:00-05:00",
        ),
        (
            "2012-11-04T03:00:00-05:00",
            "0 3 * * ?",
            "2012-11-05T03:00:00-05:00",
        ),
        // monthly job
        (
            "2012-11-04T00:00:00-04:00",
            "0 3 3 * ?",
            "2012-12-03T03:00:00-05:00",
        ),
    ];
    for (time, s, expected) in rows {
        let actual = parse_standard(s).unwrap().next_in(ts(time), &ny);
        assert_eq!(actual, ts(expected), "{s} after {time}");
    }
    // TestNextWithTz: a time at a fixed +05:30 offset
    let ist = Location::fixed("", 5 * 3600 + 1800);
    let rows: &[(&str, &str, &str)] = &[
        (
            "2016-01-03T13:09:03+05:30",
            "14 14 * * *",
            "2016-01-03T14:14:00+05:30",
        ),
        (
            "2016-01-03T04:09:03+05:30",
            "14 14 * * ?",
            "2016-01-03T14:14:00+05:30",
        ),
        (
            "2016-01-03T14:09:03+05:30",
            "14 14 * * *",
            "2016-01-03T14:14:00+05:30",
        ),
        (
            "2016-01-03T14:00:00+05:30",
            "14 14 * * ?",
            "2016-01-03T14:14:00+05:30",
        ),
    ];
    for (time, s, expected) in rows {
        let actual = parse_standard(s).unwrap().next_in(ts(time), &ist);
        assert_eq!(actual, ts(expected), "{s} after {time}");
    }
}

#[test]
fn every() {
    let s = parse_standard("@every 1h").unwrap();
    assert_eq!(
        s.next(ts("2016-05-19T09:00:00.5Z")),
        ts("2016-05-19T10:00:00Z")
    );
    // below a second is a second; fractions are dropped
    assert!(matches!(
        parse_standard("@every 10ms").unwrap(),
        Schedule::Every(ConstantDelay { seconds: 1 })
    ));
    assert!(matches!(
        parse_standard("@every 1.5s").unwrap(),
        Schedule::Every(ConstantDelay { seconds: 1 })
    ));
    assert!(matches!(
        parse_standard("@every 5m").unwrap(),
        Schedule::Every(ConstantDelay { seconds: 300 })
    ));
}

#[test]
fn errors() {
    // TestErrors, TestParseScheduleErrors, TestStandardSpecSchedule, TestSlash0NoHang;
    // the texts are what the API server reports for `spec.schedule`
    for bad in ["xyz", "60 0 * * *", "0 60 * * *", "0 0 * * XYZ"] {
        assert!(parse_standard(bad).is_err(), "{bad}");
    }
    let rows: &[(&str, &str)] = &[
        (
            "5 j * * *",
            "failed to parse int from j: strconv.Atoi: parsing \"j\": invalid syntax",
        ),
        (
            "@every Xm",
            "failed to parse duration @every Xm: time: invalid duration \"Xm\"",
        ),
        ("@unrecognized", "unrecognized descriptor: @unrecognized"),
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        ("* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"),
        ("", "empty spec string"),
        (
            "TZ=America/New_York 15/0 * * * *",
            "step of range should be a positive number: 15/0",
        ),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        (
            "TZ=Mars/Olympus * * * * *",
            "provided bad location Mars/Olympus: unknown time zone Mars/Olympus",
        ),
        (
            "TZ=UTC",
            "invalid schedule format: runtime error: slice bounds out of range [:-1]",
        ),
        (
            "* * * * 99999999999999999999",
            "failed to parse int from 99999999999999999999: strconv.Atoi: parsing \"99999999999999999999\": value out of range",
        ),
        ("@Hourly", "unrecognized descriptor: @Hourly"),
        ("59 23 31 2 * *", "expected exactly 5 fields, found 6: [59 23 31 2 * *]"),
    ];
    for (s, err) in rows {
        assert_eq!(parse_standard(s).unwrap_err(), *err, "{s}");
    }
}

#[test]
fn ranges() {
    // parser_test.go TestRange
    let rows: &[(&str, u64, u64, u64, &str)] = &[
        ("5", 0, 7, 1 << 5, ""),
        ("0", 0, 7, 1 << 0, ""),
        ("7", 0, 7, 1 << 7, ""),
        ("5-5", 0, 7, 1 << 5, ""),
        ("5-6", 0, 7, (1 << 5) | (1 << 6), ""),
        ("5-7", 0, 7, (1 << 5) | (1 << 6) | (1 << 7), ""),
        ("5-6/2", 0, 7, 1 << 5, ""),
        ("5-7/2", 0, 7, (1 << 5) | (1 << 7), ""),
        ("5-7/1", 0, 7, (1 << 5) | (1 << 6) | (1 << 7), ""),
        ("*", 1, 3, (1 << 1) | (1 << 2) | (1 << 3) | STAR_BIT, ""),
        ("*/2", 1, 3, (1 << 1) | (1 << 3), ""),
        ("5--5", 0, 0, 0, "too many hyphens"),
        ("jan-x", 0, 0, 0, "failed to parse int from"),
        ("2-x", 1, 5, 0, "failed to parse int from"),
        ("*/-12", 0, 0, 0, "negative number"),
        ("*//2", 0, 0, 0, "too many slashes"),
        ("1", 3, 5, 0, "below minimum"),
        ("6", 3, 5, 0, "above maximum"),
        ("5-3", 3, 5, 0, "beyond end of range"),
        ("*/0", 0, 0, 0, "should be a positive number"),
    ];
    for (expr, min, max, expected, err) in rows {
        match get_range(expr, bounds(*min, *max)) {
            Ok(b) => {
                assert!(err.is_empty(), "{expr}: expected {err}");
                assert_eq!(b, *expected, "{expr}");
            }
            Err(e) => assert!(!err.is_empty() && e.contains(err), "{expr}: {e}"),
        }
    }
    // TestField
    for (expr, expected) in [
        ("5", bits(&[5])),
        ("5,6", bits(&[5, 6])),
        ("5,6,7", bits(&[5, 6, 7])),
        ("1,5-7/2,3", bits(&[1, 5, 7, 3])),
        // empty items are dropped
        ("1,,3,", bits(&[1, 3])),
    ] {
        assert_eq!(get_field(expr, bounds(1, 7)).unwrap(), expected, "{expr}");
    }
    // TestBits and TestAll
    assert_eq!(get_bits(0, 0, 1), 0x1);
    assert_eq!(get_bits(1, 1, 1), 0x2);
    assert_eq!(get_bits(1, 5, 2), 0x2a);
    assert_eq!(get_bits(1, 4, 2), 0xa);
    assert_eq!(all(MINUTES), 0xfffffffffffffff | STAR_BIT);
    assert_eq!(all(HOURS), 0xffffff | STAR_BIT);
    assert_eq!(all(DOM), 0xfffffffe | STAR_BIT);
    assert_eq!(all(MONTHS), 0x1ffe | STAR_BIT);
    assert_eq!(all(DOW), 0x7f | STAR_BIT);
}

#[test]
fn parsed_fields() {
    // TestParseSchedule and TestStandardSpecSchedule
    let every5min = [1, 1 << 5, all(HOURS), all(DOM), all(MONTHS), all(DOW)];
    assert_eq!(fields(&spec("5 * * * *")), every5min);
    let utc = spec("CRON_TZ=UTC  5 * * * *");
    assert_eq!(fields(&utc), every5min);
    assert_eq!(utc.location.as_ref().map(Location::name), Some("UTC"));
    let tokyo = spec("CRON_TZ=Asia/Tokyo 5 * * * *");
    assert_eq!(
        tokyo.location.as_ref().map(Location::name),
        Some("Asia/Tokyo")
    );
    assert!(spec("5 * * * *").location.is_none());
    let midnight = [1, 1, 1, all(DOM), all(MONTHS), all(DOW)];
    assert_eq!(fields(&spec("@midnight")), midnight);
    assert_eq!(fields(&spec("TZ=UTC  @midnight")), midnight);
    let annual = [1, 1, 1, 1 << 1, 1 << 1, all(DOW)];
    assert_eq!(fields(&spec("@yearly")), annual);
    assert_eq!(fields(&spec("@annually")), annual);
    // names are case-insensitive; `?` anywhere; anything after `*-` is ignored
    assert_eq!(fields(&spec("0 0 * JAN-mar sUn")), {
        [1, 1, 1, all(DOM), bits(&[1, 2, 3]), 1]
    });
    assert_eq!(spec("? * * * *").minute, all(MINUTES));
    assert_eq!(spec("*-5 * * * *").minute, all(MINUTES));
    // a step of 1 keeps the star; a larger one does not
    assert_eq!(spec("* * */1 * *").dom, all(DOM));
    assert_eq!(spec("* * */2 * *").dom & STAR_BIT, 0);
}
