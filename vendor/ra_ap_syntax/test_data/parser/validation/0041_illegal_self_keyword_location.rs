use ::self;
use a::self::b;
