package certs

import (
	"github.com/rs/zerolog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapLogger makes certmagic (which logs through zap) log into Levee's
// zerolog logger, one line per entry with its fields.
func zapLogger(log zerolog.Logger) *zap.Logger {
	return zap.New(&zapCore{log: log})
}

type zapCore struct {
	log    zerolog.Logger
	fields []zapcore.Field
}

func (c *zapCore) Enabled(l zapcore.Level) bool {
	return zerologLevel(l) >= c.log.GetLevel()
}

func (c *zapCore) With(fields []zapcore.Field) zapcore.Core {
	return &zapCore{log: c.log, fields: append(append([]zapcore.Field(nil), c.fields...), fields...)}
}

func (c *zapCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *zapCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	ev := c.log.WithLevel(zerologLevel(e.Level)).Fields(enc.Fields)
	if e.LoggerName != "" {
		ev = ev.Str("logger", e.LoggerName)
	}
	ev.Msg(e.Message)
	return nil
}

func (c *zapCore) Sync() error { return nil }

// zerologLevel maps zap's levels. certmagic logs a failed attempt as an
// error; Levee reports it as W044 (a warning) and logs it at warn.
func zerologLevel(l zapcore.Level) zerolog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return zerolog.DebugLevel
	case l == zapcore.InfoLevel:
		return zerolog.InfoLevel
	default:
		return zerolog.WarnLevel
	}
}
