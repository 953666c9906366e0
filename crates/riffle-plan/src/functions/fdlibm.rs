//! The hyperbolic and inverse trigonometric functions as Java's `StrictMath` computes them
//! (fdlibm 5.3 algorithms, which `Math.sinh`/`cosh`/`tanh`/`asin`/`acos`/`atan` delegate to),
//! with fdlibm's own `exp` and `expm1`: the platform's versions round some results differently
//! in the last place (`exp(1)` among them).

// The constants are written digit for digit as in fdlibm, so they can be checked against it.
#![allow(clippy::excessive_precision, clippy::approx_constant)]

/// The high 32 bits of `x`.
fn high(x: f64) -> u32 {
    (x.to_bits() >> 32) as u32
}

/// `x` with its high 32 bits replaced by `hi`.
fn with_high(x: f64, hi: u32) -> f64 {
    f64::from_bits((u64::from(hi) << 32) | (x.to_bits() & 0xffff_ffff))
}

/// `y` with `k` added to its binary exponent (fdlibm's `__HI(y) += k << 20`).
fn add_exponent(y: f64, k: i32) -> f64 {
    with_high(y, high(y).wrapping_add((k << 20) as u32))
}

const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
const INV_LN2: f64 = 1.442_695_040_888_963_387_00;
const O_THRESHOLD: f64 = 7.097_827_128_933_839_730_96e2;

/// fdlibm's `__ieee754_exp`.
pub(super) fn exp(x: f64) -> f64 {
    const U_THRESHOLD: f64 = -7.451_332_191_019_411_084_20e2;
    const TWO_M1000: f64 = 9.332_636_185_032_188_789_90e-302;
    const P: [f64; 5] = [
        1.666_666_666_666_660_190_37e-1,
        -2.777_777_777_701_559_338_42e-3,
        6.613_756_321_437_934_361_17e-5,
        -1.653_390_220_546_525_153_90e-6,
        4.138_136_797_057_238_460_39e-8,
    ];
    let negative = x.is_sign_negative();
    let hx = high(x) & 0x7fff_ffff;
    if hx >= 0x4086_2e42 {
        if x.is_nan() {
            return x + x;
        }
        if x.is_infinite() {
            return if negative { 0.0 } else { x };
        }
        if x > O_THRESHOLD {
            return f64::INFINITY;
        }
        if x < U_THRESHOLD {
            return 0.0;
        }
    }
    let (mut x, hi, lo, k) = if hx > 0x3fd6_2e42 {
        let (hi, lo, k) = if hx < 0x3ff0_a2b2 {
            if negative {
                (x + LN2_HI, -LN2_LO, -1)
            } else {
                (x - LN2_HI, LN2_LO, 1)
            }
        } else {
            let k = (INV_LN2 * x + if negative { -0.5 } else { 0.5 }) as i32;
            let t = f64::from(k);
            (x - t * LN2_HI, t * LN2_LO, k)
        };
        (hi - lo, hi, lo, k)
    } else if hx < 0x3e30_0000 {
        return 1.0 + x;
    } else {
        (x, 0.0, 0.0, 0)
    };
    let t = x * x;
    let c = x - t * (P[0] + t * (P[1] + t * (P[2] + t * (P[3] + t * P[4]))));
    if k == 0 {
        return 1.0 - ((x * c) / (c - 2.0) - x);
    }
    x = 1.0 - ((lo - (x * c) / (2.0 - c)) - hi);
    if k >= -1021 {
        add_exponent(x, k)
    } else {
        add_exponent(x, k + 1000) * TWO_M1000
    }
}

/// fdlibm's `expm1` (`exp(x) - 1`, accurate near 0).
pub(super) fn expm1(x: f64) -> f64 {
    const Q: [f64; 5] = [
        -3.333_333_333_333_313_164_28e-2,
        1.587_301_587_254_814_601_65e-3,
        -7.936_507_578_674_879_424_73e-5,
        4.008_217_827_329_362_395_52e-6,
        -2.010_992_181_836_243_713_26e-7,
    ];
    let negative = x.is_sign_negative();
    let hx = high(x) & 0x7fff_ffff;
    if hx >= 0x4043_687a {
        if hx >= 0x4086_2e42 {
            if x.is_nan() {
                return x + x;
            }
            if x.is_infinite() {
                return if negative { -1.0 } else { x };
            }
            if x > O_THRESHOLD {
                return f64::INFINITY;
            }
        }
        if negative {
            return -1.0;
        }
    }
    let (x, c, k) = if hx > 0x3fd6_2e42 {
        let (hi, lo, k) = if hx < 0x3ff0_a2b2 {
            if negative {
                (x + LN2_HI, -LN2_LO, -1)
            } else {
                (x - LN2_HI, LN2_LO, 1)
            }
        } else {
            let k = (INV_LN2 * x + if negative { -0.5 } else { 0.5 }) as i32;
            let t = f64::from(k);
            (x - t * LN2_HI, t * LN2_LO, k)
        };
        let x = hi - lo;
        (x, (hi - x) - lo, k)
    } else if hx < 0x3c90_0000 {
        return x;
    } else {
        (x, 0.0, 0)
    };
    let hfx = 0.5 * x;
    let hxs = x * hfx;
    let r1 = 1.0 + hxs * (Q[0] + hxs * (Q[1] + hxs * (Q[2] + hxs * (Q[3] + hxs * Q[4]))));
    let t = 3.0 - r1 * hfx;
    let mut e = hxs * ((r1 - t) / (6.0 - x * t));
    if k == 0 {
        return x - (x * e - hxs);
    }
    e = x * (e - c) - c;
    e -= hxs;
    if k == -1 {
        return 0.5 * (x - e) - 0.5;
    }
    if k == 1 {
        return if x < -0.25 {
            -2.0 * (e - (x + 0.5))
        } else {
            1.0 + 2.0 * (x - e)
        };
    }
    if k <= -2 || k > 56 {
        return add_exponent(1.0 - (e - x), k) - 1.0;
    }
    if k < 20 {
        let t = with_high(1.0, 0x3ff0_0000 - (0x0020_0000 >> k));
        add_exponent(t - (e - x), k)
    } else {
        let t = with_high(1.0, ((0x3ff - k) << 20) as u32);
        add_exponent(x - (e + t) + 1.0, k)
    }
}

/// `x` with its low 32 bits cleared.
fn without_low(x: f64) -> f64 {
    f64::from_bits(x.to_bits() & 0xffff_ffff_0000_0000)
}

const PIO2_HI: f64 = 1.570_796_326_794_896_558_00;
const PIO2_LO: f64 = 6.123_233_995_736_766_035_87e-17;
const PIO4_HI: f64 = 7.853_981_633_974_482_789_99e-1;

/// fdlibm's rational approximation shared by `asin` and `acos`: `p(t) / q(t)`.
fn asin_ratio(t: f64) -> f64 {
    const PS: [f64; 6] = [
        1.666_666_666_666_666_574_15e-1,
        -3.255_658_186_224_009_154_05e-1,
        2.012_125_321_348_629_258_81e-1,
        -4.005_553_450_067_941_140_27e-2,
        7.915_349_942_898_145_321_76e-4,
        3.479_331_075_960_211_675_70e-5,
    ];
    const QS: [f64; 4] = [
        -2.403_394_911_734_414_218_78,
        2.020_945_760_233_505_694_71,
        -6.882_839_716_054_532_930_30e-1,
        7.703_815_055_590_193_527_91e-2,
    ];
    let p = t * (PS[0] + t * (PS[1] + t * (PS[2] + t * (PS[3] + t * (PS[4] + t * PS[5])))));
    let q = 1.0 + t * (QS[0] + t * (QS[1] + t * (QS[2] + t * QS[3])));
    p / q
}

/// `StrictMath.asin`.
pub(super) fn asin(x: f64) -> f64 {
    let ix = high(x) & 0x7fff_ffff;
    if ix >= 0x3ff0_0000 {
        if x.abs() == 1.0 {
            return x * PIO2_HI + x * PIO2_LO;
        }
        return f64::NAN;
    }
    if ix < 0x3fe0_0000 {
        if ix < 0x3e40_0000 {
            return x;
        }
        return x + x * asin_ratio(x * x);
    }
    let t = (1.0 - x.abs()) * 0.5;
    let r = asin_ratio(t);
    let s = t.sqrt();
    let t = if ix >= 0x3fef_3333 {
        PIO2_HI - (2.0 * (s + s * r) - PIO2_LO)
    } else {
        let w = without_low(s);
        let c = (t - w * w) / (s + w);
        let p = 2.0 * s * r - (PIO2_LO - 2.0 * c);
        let q = PIO4_HI - 2.0 * w;
        PIO4_HI - (p - q)
    };
    if x.is_sign_negative() {
        -t
    } else {
        t
    }
}

/// `StrictMath.acos`.
pub(super) fn acos(x: f64) -> f64 {
    const PI: f64 = 3.141_592_653_589_793_116_00;
    let ix = high(x) & 0x7fff_ffff;
    if ix >= 0x3ff0_0000 {
        return match x {
            1.0 => 0.0,
            -1.0 => PI + 2.0 * PIO2_LO,
            _ => f64::NAN,
        };
    }
    if ix < 0x3fe0_0000 {
        if ix <= 0x3c60_0000 {
            return PIO2_HI + PIO2_LO;
        }
        let r = asin_ratio(x * x);
        return PIO2_HI - (x - (PIO2_LO - x * r));
    }
    if x.is_sign_negative() {
        let z = (1.0 + x) * 0.5;
        let s = z.sqrt();
        let w = asin_ratio(z) * s - PIO2_LO;
        return PI - 2.0 * (s + w);
    }
    let z = (1.0 - x) * 0.5;
    let s = z.sqrt();
    let df = without_low(s);
    let c = (z - df * df) / (s + df);
    let w = asin_ratio(z) * s + c;
    2.0 * (df + w)
}

/// `StrictMath.atan`.
pub(super) fn atan(x: f64) -> f64 {
    const ATAN_HI: [f64; 4] = [
        4.636_476_090_008_060_935_15e-1,
        7.853_981_633_974_482_789_99e-1,
        9.827_937_232_473_290_540_82e-1,
        1.570_796_326_794_896_558_00,
    ];
    const ATAN_LO: [f64; 4] = [
        2.269_877_745_296_168_709_24e-17,
        3.061_616_997_868_383_017_93e-17,
        1.390_331_103_123_099_845_16e-17,
        6.123_233_995_736_766_035_87e-17,
    ];
    const AT: [f64; 11] = [
        3.333_333_333_333_293_180_27e-1,
        -1.999_999_999_987_648_324_76e-1,
        1.428_571_427_250_346_637_11e-1,
        -1.111_111_040_546_235_578_80e-1,
        9.090_887_133_436_506_561_96e-2,
        -7.691_876_205_044_829_994_95e-2,
        6.661_073_137_387_531_206_69e-2,
        -5.833_570_133_790_573_486_45e-2,
        4.976_877_994_615_932_360_17e-2,
        -3.653_157_274_421_691_552_70e-2,
        1.628_582_011_536_578_236_23e-2,
    ];
    let ix = high(x) & 0x7fff_ffff;
    let negative = x.is_sign_negative();
    if ix >= 0x4410_0000 {
        if x.is_nan() {
            return x + x;
        }
        let z = ATAN_HI[3] + ATAN_LO[3];
        return if negative { -z } else { z };
    }
    let (x, id) = if ix < 0x3fdc_0000 {
        if ix < 0x3e20_0000 {
            return x;
        }
        (x, None)
    } else {
        let x = x.abs();
        if ix < 0x3ff3_0000 {
            if ix < 0x3fe6_0000 {
                ((2.0 * x - 1.0) / (2.0 + x), Some(0))
            } else {
                ((x - 1.0) / (x + 1.0), Some(1))
            }
        } else if ix < 0x4003_8000 {
            ((x - 1.5) / (1.0 + 1.5 * x), Some(2))
        } else {
            (-1.0 / x, Some(3))
        }
    };
    let z = x * x;
    let w = z * z;
    let s1 = z * (AT[0] + w * (AT[2] + w * (AT[4] + w * (AT[6] + w * (AT[8] + w * AT[10])))));
    let s2 = w * (AT[1] + w * (AT[3] + w * (AT[5] + w * (AT[7] + w * AT[9]))));
    let Some(id) = id else {
        return x - x * (s1 + s2);
    };
    let z = ATAN_HI[id] - ((x * (s1 + s2) - ATAN_LO[id]) - x);
    if negative {
        -z
    } else {
        z
    }
}

/// True when `|x|` is at most fdlibm's overflow threshold of `sinh`/`cosh`.
fn below_overflow(x: f64) -> bool {
    let bits = x.abs().to_bits();
    let (ix, lx) = ((bits >> 32) as u32, bits as u32);
    ix < 0x4086_33ce || (ix == 0x4086_33ce && lx <= 0x8fb9_f87d)
}

/// `StrictMath.sinh`.
pub(super) fn sinh(x: f64) -> f64 {
    let ix = high(x) & 0x7fff_ffff;
    if !x.is_finite() {
        return x + x;
    }
    let h = if x.is_sign_negative() { -0.5 } else { 0.5 };
    if ix < 0x4036_0000 {
        if ix < 0x3e30_0000 {
            return x;
        }
        let t = expm1(x.abs());
        if ix < 0x3ff0_0000 {
            return h * (2.0 * t - t * t / (t + 1.0));
        }
        return h * (t + t / (t + 1.0));
    }
    if ix < 0x4086_2e42 {
        return h * exp(x.abs());
    }
    if below_overflow(x) {
        let w = exp(0.5 * x.abs());
        return h * w * w;
    }
    x * 1.0e307
}

/// `StrictMath.cosh`.
pub(super) fn cosh(x: f64) -> f64 {
    let ix = high(x) & 0x7fff_ffff;
    if !x.is_finite() {
        return x * x;
    }
    if ix < 0x3fd6_2e43 {
        let t = expm1(x.abs());
        let w = 1.0 + t;
        if ix < 0x3c80_0000 {
            return w;
        }
        return 1.0 + (t * t) / (w + w);
    }
    if ix < 0x4036_0000 {
        let t = exp(x.abs());
        return 0.5 * t + 0.5 / t;
    }
    if ix < 0x4086_2e42 {
        return 0.5 * exp(x.abs());
    }
    if below_overflow(x) {
        let w = exp(0.5 * x.abs());
        return 0.5 * w * w;
    }
    f64::INFINITY
}

/// `StrictMath.tanh`.
pub(super) fn tanh(x: f64) -> f64 {
    let ix = high(x) & 0x7fff_ffff;
    if x.is_nan() {
        return x;
    }
    let z = if ix < 0x4036_0000 {
        if ix < 0x3c80_0000 {
            return x * (1.0 + x);
        }
        if ix >= 0x3ff0_0000 {
            let t = expm1(2.0 * x.abs());
            1.0 - 2.0 / (t + 2.0)
        } else {
            let t = expm1(-2.0 * x.abs());
            -t / (t + 2.0)
        }
    } else {
        1.0
    };
    if x.is_sign_negative() {
        -z
    } else {
        z
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_strict_math() {
        // Values Java's StrictMath returns (the platform's libm differs in the last digit).
        assert_eq!(exp(1.0), 2.718_281_828_459_045_5);
        assert_eq!(cosh(1.0), 1.543_080_634_815_244);
        assert_eq!(sinh(0.5), 0.521_095_305_493_747_4);
        assert_eq!(tanh(-0.25), -0.244_918_662_403_709_13);
        assert_eq!(cosh(20.0), 2.425_825_977_048_951_4e8);
        assert_eq!(tanh(f64::INFINITY), 1.0);
        assert_eq!(sinh(-0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(acos(1.757_861 / 4.0), 1.115_793_058_038_485_6);
        assert_eq!(asin(-2.055_035 / 4.0), -0.539_560_233_028_060_9);
        assert_eq!(atan(2.893_161), 1.238_008_544_317_506);
    }
}
