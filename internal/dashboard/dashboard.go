// Package dashboard is `talosctl dashboard`: a terminal UI that follows
// nodes through their API, screen by screen as Talos's does (F1 summary
// and log, F2 monitor: graphs and processes, F3 network).
//
// Data flows one way: a poller per node (one Source each) polls every
// interval and publishes immutable Snapshots into a mailbox; one pump
// goroutine hands the mailbox to the UI goroutine, which alone touches the
// widgets. The node on screen is polled in full; the others only for what
// their graphs need, so a long -n list stays cheap for every node.
package dashboard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// DefaultInterval is Talos's --update-interval default.
const DefaultInterval = 3 * time.Second

// Options configure a dashboard.
type Options struct {
	// Sources are the nodes, one each, in the order the footer lists them.
	Sources []Source
	// Interval is the time between polls; DefaultInterval when zero.
	Interval time.Duration
	// AfterDraw, when set, is called on the UI goroutine after each frame
	// is drawn and before it is shown: tests read the screen there.
	AfterDraw func(tcell.Screen)
}

// logTail is how much log a node shows when it comes on screen, and
// maxLogLines how much the log view keeps.
const (
	logTail     = 200
	maxLogLines = 1000
	// logRetry is the wait before a failed log stream is opened again
	// (the node may be rebooting).
	logRetry = 5 * time.Second
)

// screenNames are the screens, in the order of their function keys.
var screenNames = []string{"Summary", "Monitor", "Network Config"}

// view is one screen.
type view interface {
	tview.Primitive

	// update draws s, the node on screen's latest snapshot; nil (before
	// the node's first answer) clears the screen of the node shown before.
	update(s *Snapshot)
	// focused is the primitive that takes the keys on this screen.
	focused() tview.Primitive
	// scroll moves the focused list by lines; half is half a page.
	scroll(lines int, half bool)
}

// Dashboard is a running dashboard. Fields below the mailbox are the UI
// goroutine's.
type Dashboard struct {
	app     *tview.Application
	cancel  context.CancelFunc
	started chan struct{}
	pollers []*poller

	box        mailbox
	logTargets chan logTarget

	header  *tview.TextView
	footer  *Footer
	pages   *tview.Pages
	views   []view
	summary *summaryView

	snaps  []*Snapshot
	node   int
	screen int
	spin   int
	paused bool
	logGen int
}

// Run shows the dashboard on screen until ctx ends or the user quits (q
// or Ctrl-C). screen is initialized here (tview does it); it is finalized
// when Run returns.
func Run(ctx context.Context, screen tcell.Screen, opts Options) error {
	if len(opts.Sources) == 0 {
		return errors.New("dashboard: no nodes")
	}

	if opts.Interval < 0 {
		return fmt.Errorf("dashboard: update interval %s is not positive", opts.Interval)
	}

	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	d := newDashboard(opts, cancel)
	d.app.SetScreen(screen)

	var wg sync.WaitGroup

	for i, p := range d.pollers {
		wg.Go(func() { p.run(ctx, func(s *Snapshot) { d.box.postSnapshot(i, s) }) })
	}

	wg.Go(func() { d.followLogs(ctx) })
	wg.Go(func() { d.pump(ctx) })

	// Selecting the first node activates its poller and its log.
	d.selectNode(0)
	d.selectScreen(0)

	appDone := make(chan error, 1)

	go func() { appDone <- d.app.Run() }()

	select {
	case <-ctx.Done():
	case err := <-appDone:
		// The app ended by itself: the terminal failed under it. The pump
		// may be waiting on an update the app will never run, so it is
		// not waited for; the deferred cancel ends the rest.
		if err != nil {
			return fmt.Errorf("dashboard: %w", err)
		}

		return nil
	}

	// Stop the pollers and the pump while the app still runs the pump's
	// last update, then the app; stopping it before its first frame would
	// make it open a terminal of its own.
	wg.Wait()

	select {
	case <-d.started:
	case err := <-appDone:
		return err
	}

	d.app.Stop()

	return <-appDone
}

func newDashboard(opts Options, cancel context.CancelFunc) *Dashboard {
	d := &Dashboard{
		app:        tview.NewApplication(),
		cancel:     cancel,
		started:    make(chan struct{}),
		box:        mailbox{snaps: map[int]*Snapshot{}, notify: make(chan struct{}, 1)},
		logTargets: make(chan logTarget, 1),
		header:     tview.NewTextView().SetDynamicColors(true).SetWrap(false),
		pages:      tview.NewPages(),
		snaps:      make([]*Snapshot, len(opts.Sources)),
	}

	nodes := make([]string, len(opts.Sources))
	for i, src := range opts.Sources {
		nodes[i] = src.Node()
		d.pollers = append(d.pollers, newPoller(src, opts.Interval))
	}

	d.footer = NewFooter(nodes, screenNames)
	d.summary = newSummaryView()
	d.views = []view{d.summary, newMonitorView(), newNetworkView()}

	for i, v := range d.views {
		d.pages.AddPage(screenNames[i], v, true, i == 0)
	}

	root := tview.NewGrid().SetRows(1, 0, 1).SetColumns(0).
		AddItem(d.header, 0, 0, 1, 1, 0, 0, false).
		AddItem(d.pages, 1, 0, 1, 1, 0, 0, true).
		AddItem(d.footer, 2, 0, 1, 1, 0, 0, false)

	var once sync.Once

	d.app.SetRoot(root, true).
		SetInputCapture(d.key).
		SetAfterDrawFunc(func(screen tcell.Screen) {
			once.Do(func() { close(d.started) })

			if opts.AfterDraw != nil {
				opts.AfterDraw(screen)
			}
		})

	return d
}

// key handles the keys that work on every screen; the others go to the
// focused list (j/k, arrows up and down, g/G, Ctrl-F/B).
func (d *Dashboard) key(ev *tcell.EventKey) *tcell.EventKey {
	switch {
	case ev.Key() >= tcell.KeyF1 && ev.Key() < tcell.KeyF1+tcell.Key(len(d.views)):
		d.selectScreen(int(ev.Key() - tcell.KeyF1))
	case ev.Key() == tcell.KeyLeft || ev.Key() == tcell.KeyRune && ev.Rune() == 'h':
		d.selectNode(d.node - 1)
	case ev.Key() == tcell.KeyRight || ev.Key() == tcell.KeyRune && ev.Rune() == 'l':
		d.selectNode(d.node + 1)
	case ev.Key() == tcell.KeyCtrlC || ev.Key() == tcell.KeyRune && ev.Rune() == 'q':
		// Run stops the app once the pollers are done.
		d.cancel()
	case ev.Key() == tcell.KeyCtrlZ:
		d.paused = !d.paused
		d.footer.paused = d.paused
		d.render()
	case ev.Key() == tcell.KeyCtrlD:
		d.views[d.screen].scroll(1, true)
	case ev.Key() == tcell.KeyCtrlU:
		d.views[d.screen].scroll(-1, true)
	default:
		return ev
	}

	return nil
}

// selectNode puts node i on screen (clamped to the list): its poller goes
// to full polls, the previous one back to cheap ones, and the log view
// follows the new node from its tail.
func (d *Dashboard) selectNode(i int) {
	i = max(0, min(i, len(d.pollers)-1))
	if i == d.node && d.logGen > 0 {
		return
	}

	d.pollers[d.node].setActive(false)
	d.node = i
	d.footer.node = i
	d.pollers[i].setActive(true)

	d.logGen++
	d.summary.logs.Clear()

	// Only the UI goroutine sends, so after emptying the buffer the send
	// cannot block; a target not yet taken is replaced, not queued.
	select {
	case <-d.logTargets:
	default:
	}

	d.logTargets <- logTarget{src: d.pollers[i].src, gen: d.logGen}

	d.render()
}

func (d *Dashboard) selectScreen(i int) {
	d.screen = i
	d.footer.screen = i
	d.pages.SwitchToPage(screenNames[i])
	d.app.SetFocus(d.views[i].focused())
	d.render()
}

// render draws the node on screen into the header and the current screen.
func (d *Dashboard) render() {
	node, snap := d.pollers[d.node].src.Node(), d.snaps[d.node]
	now := time.Now()

	d.header.SetText(headerText(node, snap, d.spin, now))
	d.views[d.screen].update(snap)
}

// apply takes the mailbox's news into the UI.
func (d *Dashboard) apply() {
	snaps, logs := d.box.take()

	for i, s := range snaps {
		d.snaps[i] = s
	}

	for _, l := range logs {
		if l.gen != d.logGen {
			continue // a line of the node shown before
		}

		if l.reset {
			d.summary.logs.Clear()

			continue
		}

		fmt.Fprintln(d.summary.logs, l.text)
	}

	if _, ok := snaps[d.node]; ok && !d.paused {
		d.spin++
		d.render()
	}
}

// pump hands the mailbox to the UI goroutine each time there is news. It
// waits for each update to run, so the app's queue never fills and news
// arriving meanwhile is taken in one update.
func (d *Dashboard) pump(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.box.notify:
		}

		d.app.QueueUpdateDraw(d.apply)
	}
}

// mailbox is where the pollers and the log follower leave news for the UI.
type mailbox struct {
	mu     sync.Mutex
	snaps  map[int]*Snapshot // the latest per node: older ones are moot
	logs   []logLine
	notify chan struct{}
}

// logLine is a line of the log view; reset clears the view first (a log
// stream opened again resends its tail).
type logLine struct {
	gen   int
	text  string
	reset bool
}

func (m *mailbox) postSnapshot(node int, s *Snapshot) {
	m.mu.Lock()
	m.snaps[node] = s
	m.mu.Unlock()

	m.wake()
}

func (m *mailbox) postLog(l logLine) {
	m.mu.Lock()
	// The view keeps maxLogLines; more waiting would only be cut there.
	if len(m.logs) >= maxLogLines {
		m.logs = append(m.logs[:0], m.logs[len(m.logs)-maxLogLines+1:]...)
	}

	m.logs = append(m.logs, l)
	m.mu.Unlock()

	m.wake()
}

func (m *mailbox) wake() {
	select {
	case m.notify <- struct{}{}:
	default: // a wake-up is already pending; it will take this too
	}
}

func (m *mailbox) take() (map[int]*Snapshot, []logLine) {
	m.mu.Lock()
	defer m.mu.Unlock()

	snaps, logs := m.snaps, m.logs
	m.snaps, m.logs = map[int]*Snapshot{}, nil

	return snaps, logs
}

// logTarget is the node whose log the view follows; gen tells its lines
// from those of the node before.
type logTarget struct {
	src Source
	gen int
}

// followLogs follows the log of the node on screen, switching streams as
// the node changes.
func (d *Dashboard) followLogs(ctx context.Context) {
	var (
		wg   sync.WaitGroup
		stop = func() {}
	)

	defer func() {
		stop()
		wg.Wait()
	}()

	for {
		select {
		case <-ctx.Done():
			return
		case t := <-d.logTargets:
			stop()
			wg.Wait()

			lctx, cancel := context.WithCancel(ctx)
			stop = cancel

			wg.Go(func() { d.tailLogs(lctx, t) })
		}
	}
}

// tailLogs streams one node's log into the mailbox, opening the stream
// again after a failure.
func (d *Dashboard) tailLogs(ctx context.Context, t logTarget) {
	for {
		err := t.src.FollowLogs(ctx, logTail, func(line string) {
			d.box.postLog(logLine{gen: t.gen, text: tview.Escape(line)})
		})
		if ctx.Err() != nil {
			return
		}

		if err == nil {
			err = errors.New("log stream ended")
		}

		d.box.postLog(logLine{gen: t.gen, text: "[red]" + tview.Escape(err.Error()) + "[-]"})

		retry := time.NewTimer(logRetry)

		select {
		case <-ctx.Done():
			retry.Stop()

			return
		case <-retry.C:
		}

		d.box.postLog(logLine{gen: t.gen, reset: true})
	}
}
