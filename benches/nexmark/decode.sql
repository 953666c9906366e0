-- Decode-only baseline for `riffle bench nexmark --dir benches/nexmark --queries decode`: the
-- Nexmark events (the fixtures' `datagen` table without its computed `dateTime` column and
-- watermark) decoded into a blackhole, to compare the stateless queries with the input
-- format's decode rate.

CREATE TABLE datagen (
    event_type int,
    person ROW<
        id  BIGINT,
        name  VARCHAR,
        emailAddress  VARCHAR,
        creditCard  VARCHAR,
        city  VARCHAR,
        state  VARCHAR,
        `dateTime` TIMESTAMP(3),
        extra  VARCHAR>,
    auction ROW<
        id  BIGINT,
        itemName  VARCHAR,
        description  VARCHAR,
        initialBid  BIGINT,
        reserve  BIGINT,
        `dateTime`  TIMESTAMP(3),
        expires  TIMESTAMP(3),
        seller  BIGINT,
        category  BIGINT,
        extra  VARCHAR>,
    bid ROW<
        auction  BIGINT,
        bidder  BIGINT,
        price  BIGINT,
        channel  VARCHAR,
        url  VARCHAR,
        `dateTime`  TIMESTAMP(3),
        extra  VARCHAR>
) WITH (
    'connector' = 'nexmark',
    'first-event.rate' = '10000',
    'next-event.rate' = '10000',
    'events.num' = '100000',
    'person.proportion' = '1',
    'auction.proportion' = '3',
    'bid.proportion' = '46'
);

CREATE TABLE decoded (
    event_type int,
    person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR,
        state VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR>,
    auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT,
        reserve BIGINT, `dateTime` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT,
        category BIGINT, extra VARCHAR>,
    bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
        `dateTime` TIMESTAMP(3), extra VARCHAR>
) WITH (
    'connector' = 'blackhole'
);

INSERT INTO decoded SELECT event_type, person, auction, bid FROM datagen;
